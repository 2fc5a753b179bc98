"""Sampling in the engine: one generator per request, derived from the engine's seed and the
request's identity, so a request's tokens do not depend on its batch-mates and the global torch
generator is never reseeded; the scheduler alone (no model)."""

from __future__ import annotations

import pytest
import torch

from tests.support.models import peaky_model
from tracec.llm.engine import KVEngine
from tracec.llm.sampler import request_seed
from tracec.llm.scheduler import Request, Scheduler


@pytest.fixture(scope="module", params=["transformers", "lean"])
def peaky(tiny_model_dir, request):
    return peaky_model(tiny_model_dir, frozen=request.param == "lean")


def _prompts(vocab: int, n: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(9)
    head = torch.randint(5, vocab, (30,), generator=g).tolist()
    return [head + torch.randint(5, vocab, (2 + k,), generator=g).tolist() for k in range(n)]


def test_a_sampled_request_is_the_same_alone_and_inside_a_batch(peaky):
    prompts = _prompts(peaky.config.vocab_size, 5)
    alone = KVEngine(peaky, 0, [3], seed=7)
    alone.start(42, prompts[2])
    want = alone.generate([42], [prompts[2]], [10], 1.0)[0]
    # the same conversation key among four others, two rows: it waits, then takes a freed row
    crowd = KVEngine(peaky, 0, [3], max_rows=2, seed=7)
    keys = [1, 2, 42, 4, 5]
    crowd.start_many(list(zip(keys, prompts)))
    got = crowd.generate(keys, prompts, [4, 10, 10, 6, 8], 1.0)
    assert got[2] == want
    assert len(set(map(tuple, got))) == len(got)  # batch-mates draw their own streams
    # complete(): prompt i samples with seeds[i], wherever it sits in the call
    one = KVEngine(peaky, 0, [3]).complete([prompts[2]], 10, 1.0, seeds=[11])[0]
    many = KVEngine(peaky, 0, [3], max_rows=3).complete(prompts, 10, 1.0, seeds=[1, 2, 11, 4, 5])
    assert many[2] == one


def test_the_global_generator_is_left_alone_and_turns_draw_new_streams(peaky):
    prompts = _prompts(peaky.config.vocab_size, 2)
    eng = KVEngine(peaky, 0, [3], seed=3)
    eng.start_many([(0, prompts[0]), (1, prompts[1])])
    state = torch.random.get_rng_state()
    first = eng.generate([0, 1], prompts, [8, 8], 1.0)
    assert torch.equal(torch.random.get_rng_state(), state)
    # turn 2 of conversation 0 seeds from (seed, 0, 1), not its first turn's (seed, 0, 0)
    assert request_seed(3, 0, 1) != request_seed(3, 0, 0)
    again = KVEngine(peaky, 0, [3], seed=3)
    again.start_many([(0, prompts[0]), (1, prompts[1])])
    assert again.generate([0, 1], prompts, [8, 8], 1.0) == first  # reproducible from the seed
    other = KVEngine(peaky, 0, [3], seed=4)
    other.start_many([(0, prompts[0]), (1, prompts[1])])
    assert other.generate([0, 1], prompts, [8, 8], 1.0) != first


def test_an_engine_without_a_seed_follows_torch_manual_seed(peaky):
    prompts = _prompts(peaky.config.vocab_size, 2)
    runs = []
    for _ in range(2):
        torch.manual_seed(5)
        runs.append(KVEngine(peaky, 0, [3]).complete(prompts, 8, 1.0))
    assert runs[0] == runs[1]


def _req(i: int, pending: int) -> Request:
    return Request(i, i, list(range(10 + pending)), 10, budget=4)


def test_the_scheduler_fills_rows_longest_first_then_replaces_and_drops_finished_rows():
    reqs = [_req(0, 1), _req(1, 5), _req(2, 3), _req(3, 2)]
    sched = Scheduler(reqs, max_rows=2)
    first = sched.schedule()
    assert [(r, q.index) for r, q in first.prefill] == [(0, 1), (1, 0)] and first.capacity == 2
    assert [q.index for q in sched.schedule().decode] == [1, 0]
    sched.finish(reqs[0])  # row 1 is freed: the next waiting request takes it
    step = sched.schedule()
    assert [(r, q.index) for r, q in step.prefill] == [(1, 2)] and not step.decode
    sched.finish(reqs[1])
    sched.finish(reqs[2])
    step = sched.schedule()  # two rows free, one request waiting: row 1 refilled, row 0 dropped
    assert [(r, q.index) for r, q in step.prefill] == [(1, 3)] and step.drop == [0]
    assert [q.index for q in sched.rows] == [3]
    sched.finish(reqs[3])
    step = sched.schedule()
    assert step.drop == [0] and not step.decode and not sched.rows
    assert sched.schedule() is None


def test_a_local_agent_draws_new_streams_each_call_and_repeats_with_its_seed(tiny_model_dir):
    """No reseeding wrapper: the same conversation asked twice samples twice."""
    from tracec.harness.agents import LocalAgent
    from tracec.llm.local import LocalChatModel

    chat = LocalChatModel(str(tiny_model_dir))
    batch = [([{"role": "user", "content": f"Hi, what is the status of flight {n}?"}], []) for n in range(3)]

    def run(seed):
        agent = LocalAgent("tiny", max_new_tokens=12, temperature=1.0, seed=seed, chat_model=chat)
        return [agent.act(batch) for _ in range(2)]

    first, second = run(5)
    assert first != second  # each call draws its own streams
    assert run(5) == [first, second]  # reproducible from the agent's seed
    assert run(6)[0] != first
