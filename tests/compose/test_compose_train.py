"""Gate training: data rendering, assistant masks, the loop, and that the router learns."""

from __future__ import annotations

import pytest
import torch

from tracec.compose.model import ComposeError, build_composed
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
    from tracec.compose.model import RoutingRecord

    chosen = torch.tensor([[0, 1, 1], [2, 2, 0]]).unsqueeze(-1)
    rec = RoutingRecord(logits=torch.zeros(2, 3, 3), probs=torch.zeros(2, 3, 3), chosen=chosen)
    stats = RoutingStats(["<none>", "a", "b"])
    stats.add([rec], torch.tensor([[1, 1, 1], [1, 1, 0]]))
    assert stats.counts == [[1, 2, 2]]
    assert stats.overall() == pytest.approx([0.2, 0.4, 0.4])


def test_gates_learn_to_prefer_the_adapter_that_wrote_the_data(world, trajectories):
    cm = build_composed(world[1])
    tok = cm.tokenizer
    rows = read_trajectories([trajectories])
    with cm.forced(1):  # assistant answers written by expert 1 (alpha_skill)
        answers = cm.generate([r["messages"][:2] for r in rows], max_new_tokens=16)
    for r, a in zip(rows, answers):
        r["messages"] = r["messages"][:2] + [{"role": "assistant", "content": a}]
    examples, skipped = encode_all(tok, rows, 512)
    assert skipped == 0 and len(examples) == len(rows)
    pad = tok.pad_token_id
    ce_base = evaluate_ce(cm, examples, pad, force=0)
    ce_alpha = evaluate_ce(cm, examples, pad, force=1)
    assert ce_alpha < ce_base
    assert evaluate_ce(cm, examples, pad) == pytest.approx(ce_base)  # zero gates = base
    cfg = ComposeTrainConfig(lr=0.05, max_steps=16, batch_size=5)
    metrics, stats = train_gates(cm, examples, cfg, pad)
    assert len(metrics) == 16 and all(m["ce"] > 0 and m["lb"] > 0 for m in metrics)
    shares = stats.overall()
    assert shares[1] > shares[2]
    assert evaluate_ce(cm, examples, pad) < ce_base
    for name, p in cm.named_parameters():  # frozen experts and base
        if not name.startswith("gates."):
            assert p.grad is None


def test_train_without_examples_is_a_clear_error(world):
    cm = build_composed(world[1])
    with pytest.raises(ComposeError, match="no trainable trajectories"):
        train_gates(cm, [], ComposeTrainConfig(), 0)
