"""`tracec play` with piped input."""

from __future__ import annotations

from click.testing import CliRunner

from tests.runtime.tiny_capability import TinyOrdersEnv
from tracec.harness.cli import play_cmd, shorthand_call, to_action
from tracec.runtime.toolcall import parse_turn

FIXTURE = "tests/runtime/tiny_capability.py"


def test_shorthand_and_raw_inputs_become_turns():
    assert shorthand_call('get_order_details(order_id="#1", n=2, ok=true, xs=[1, null])') == (
        "get_order_details", {"order_id": "#1", "n": 2, "ok": True, "xs": [1, None]})
    assert parse_turn(to_action("cancel_order(order_id='#2', reason='no longer needed')")).calls[0].arguments == {
        "order_id": "#2", "reason": "no longer needed"}
    raw = '{"name": "f", "arguments": {}}'
    assert to_action(raw) == raw and to_action("hello there\n") == "hello there"


def test_play_an_episode_to_the_reward():
    env = TinyOrdersEnv()
    env.reset(seed=2, options={"task": "order_total"})
    order_id = env.instance.gold[0].args["order_id"]
    total = env.instance.communicate["total"]
    lines = [
        "get_order_details(order_id=",  # typo: not sent, explained
        f'get_order_details(order_id="{order_id}")',
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',
        f"Your order total is ${total:.2f}.",
    ]
    result = CliRunner().invoke(play_cmd, [FIXTURE, "--seed", "2", "--task", "order_total", "--hint"],
                                input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "cannot read that tool call" in out
    assert order_id in out and '"items"' in out
    assert "Error: unknown tool `nope`" in out
    assert "hint:" in out and "Add up every item's price." in out
    assert "reward 1" in out and "state_matches" in out and "ended_by" in out


def test_play_quit_and_bad_env():
    result = CliRunner().invoke(play_cmd, [FIXTURE, "--task", "cancel"], input=":tools\n:quit\n")
    assert result.exit_code == 0 and "cancel_order" in result.output and "stopped" in result.output
    result = CliRunner().invoke(play_cmd, ["no_such_capability"])
    assert result.exit_code == 1 and "unknown environment" in result.output
    result = CliRunner().invoke(play_cmd, [FIXTURE, "--task", "nope"])
    assert result.exit_code == 1 and "unknown task 'nope'" in result.output
