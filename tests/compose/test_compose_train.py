"""Gate training: data rendering, assistant masks, the loop, and that the router learns."""

from __future__ import annotations

import pytest
import torch

from tracec.compose.api import build_composed
from tracec.compose.errors import ComposeError
from tracec.compose.training import (
    ComposeTrainConfig,
    RoutingStats,
    encode,
    encode_all,
    evaluate_ce,
    read_trajectories,
    select_successful,
    train_gates,
)


@pytest.fixture(scope="module")
def trajectories(world, tmp_path_factory):
    from tests.compose.compose_helpers import make_trajectories

    return make_trajectories(tmp_path_factory.mktemp("traj") / "t.jsonl", n=10)


def test_read_and_select(trajectories, tmp_path):
    rows = read_trajectories([trajectories])
    assert len(rows) == 10
    good = select_successful(rows)
    assert [r["id"] for r in good] == [r["id"] for r in rows if r["success"]]
    assert len(select_successful(rows, min_reward=0.5)) == len(good)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n{not json\n')
    with pytest.raises(ComposeError, match=r"bad.jsonl:2: invalid JSON"):
        read_trajectories([bad])
    with pytest.raises(ComposeError, match="cannot read"):
        read_trajectories([tmp_path / "missing.jsonl"])


def test_encode_marks_exactly_the_assistant_turns(world, trajectories):
    cm = build_composed(world[1])
    tok = cm.tokenizer
    row = read_trajectories([trajectories])[0]
    ex = encode(tok, row, 4096)
    assert ex is not None and len(ex.ids) == len(ex.train)
    trained = tok.decode([t for t, m in zip(ex.ids, ex.train) if m])
    assert '"name": "get_reservation_details"' in trained  # the tool call is trained
    assert "The total is 100 dollars." in trained
    assert "what did I pay" not in trained and "airline agent" not in trained  # user/system are not
    assert '{"total": 100}' not in trained  # tool output is not
    no_assistant = {**row, "messages": row["messages"][:2]}
    assert encode(tok, no_assistant, 4096) is None
    short = encode(tok, row, 16)
    assert short is None or len(short.ids) <= 16


def test_routing_stats_counts_non_padding_tokens():
    from tracec.compose.layer import RoutingRecord

    chosen = torch.tensor([[0, 1, 1], [2, 2, 0]]).unsqueeze(-1)
    rec = RoutingRecord(logits=torch.zeros(2, 3, 3), probs=torch.zeros(2, 3, 3), chosen=chosen)
    stats = RoutingStats(["<none>", "a", "b"])
    stats.add([rec], torch.tensor([[1, 1, 1], [1, 1, 0]]))
    assert stats.counts == [[1, 2, 2]]
    assert stats.overall() == pytest.approx([0.2, 0.4, 0.4])


def test_gates_learn_to_prefer_the_adapter_that_wrote_the_data(world):
    from tests.compose.compose_helpers import writer_examples

    cm = build_composed(world[1])
    pad = cm.tokenizer.pad_token_id
    examples = writer_examples(cm, [1] * 10)  # answers sampled from expert 1 (alpha_skill)
    ce_base = evaluate_ce(cm, examples, pad, force=0)
    ce_alpha = evaluate_ce(cm, examples, pad, force=1)
    assert ce_alpha < ce_base
    assert evaluate_ce(cm, examples, pad) == pytest.approx(ce_base)  # zero gates = base
    cfg = ComposeTrainConfig(lr=0.05, max_steps=16, batch_size=5)
    metrics, stats = train_gates(cm, examples, cfg, pad)
    assert len(metrics) == 16 and all(m["ce"] > 0 and m["lb"] >= 0 for m in metrics)
    assert [m["warmup"] for m in metrics] == [True] * cfg.warmup_steps + [False] * (16 - cfg.warmup_steps)
    assert stats.overall()[0] < 1.0  # tokens left "no adapter"
    ce = evaluate_ce(cm, examples, pad)  # top-1 inference routing
    assert ce < ce_base and ce < evaluate_ce(cm, examples, pad, force=2)  # better than base or beta
    for name, p in cm.named_parameters():  # frozen experts and base
        if not name.startswith("gates."):
            assert p.grad is None


def test_train_without_examples_is_a_clear_error(world):
    cm = build_composed(world[1])
    with pytest.raises(ComposeError, match="no trainable trajectories"):
        train_gates(cm, [], ComposeTrainConfig(), 0)


def _ce_gate_grads(cm, examples, pad, warm: bool):
    from tracec.compose.training import assistant_ce, batches

    batch = batches(examples, 4, pad)[0]
    for p in cm.gate_parameters():
        p.grad = None
    cm.train()
    if warm:
        with cm.routing_mode(cm.config.top_k, "dense"):
            ce, _ = assistant_ce(cm, batch)
    else:
        ce, _ = assistant_ce(cm, batch)
    ce.backward()
    cm.eval()
    grads = [g.proj.weight.grad.clone() for g in cm.gates]
    for p in cm.gate_parameters():
        p.grad = None
    return grads


def test_gate_gradient_is_nonzero_at_init(world, trajectories):
    """Zero gates: top-1 sends every token to "no adapter" and the CE gives the gates exactly no
    gradient; the default start (dense warm-up) gives every gate and both experts' rows one."""
    cm = build_composed(world[1])
    assert ComposeTrainConfig().warmup == "dense" and ComposeTrainConfig().warmup_steps > 0
    examples, _ = encode_all(cm.tokenizer, select_successful(read_trajectories([trajectories])), 512)
    pad = cm.tokenizer.pad_token_id
    for g in _ce_gate_grads(cm, examples, pad, warm=False):
        assert float(g.abs().max()) == 0.0
    for g in _ce_gate_grads(cm, examples, pad, warm=True):
        assert all(float(g[slot].abs().sum()) > 0 for slot in (1, 2))  # both experts' rows
        torch.testing.assert_close(g.sum(0), torch.zeros_like(g[0]), atol=1e-6, rtol=0)  # softmax


def test_selective_ce_equals_full_logits(world, trajectories):
    from tracec.compose.training import assistant_ce, batches, token_ce

    cm = build_composed(world[1], top_k=2)
    examples, _ = encode_all(cm.tokenizer, select_successful(read_trajectories([trajectories])), 512)
    batch = batches(examples, 3, cm.tokenizer.pad_token_id)[0]
    with torch.no_grad():
        for gate in cm.gates:
            gate.reset("normal", 2.0, torch.Generator().manual_seed(0))
    full_logits = cm(batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=False).logits
    full, n_full = token_ce(full_logits, batch["input_ids"], batch["train_mask"])
    full.backward()
    want = [p.grad.clone() for p in cm.gate_parameters()]
    for p in cm.gate_parameters():
        p.grad = None
    cm.set_checkpointing(True)
    sel, n_sel = assistant_ce(cm, batch)
    sel.backward()
    cm.set_checkpointing(False)
    assert n_sel == n_full and float(sel) == pytest.approx(float(full), rel=1e-5)
    for p, w in zip(cm.gate_parameters(), want):
        torch.testing.assert_close(p.grad, w, rtol=1e-4, atol=1e-7)
        p.grad = None


def test_memory_check_refuses_a_batch_that_cannot_fit(world, trajectories):
    from tracec.compose.training import check_memory

    cm = build_composed(world[1])
    examples, _ = encode_all(cm.tokenizer, select_successful(read_trajectories([trajectories])), 512)
    need = check_memory(cm, examples, ComposeTrainConfig(max_memory_gib=64))
    assert need > 0
    with pytest.raises(ComposeError, match=r"needs ~.* GiB .* lower --batch-size or --max-length"):
        check_memory(cm, examples, ComposeTrainConfig(max_memory_gib=need / 2**30 / 2))
