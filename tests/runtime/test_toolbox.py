"""``env.toolbox``: the public view of a capability's tools that checks and tools outside the
runtime use (``env._box`` stays internal)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.runtime import tiny_capability as tc
from tracec.runtime.env import CapabilityEnv, Toolbox

ROOT = Path(__file__).resolve().parents[2]


def test_toolbox_names_the_tools_that_write_and_end() -> None:
    env = tc.TinyOrdersEnv()
    box = env.toolbox
    assert isinstance(box, Toolbox)
    assert list(box.tools) == [*tc.DOMAIN.tools, "note"]  # the inline tool after the domain's
    assert box.writes == frozenset({"cancel_order", "refund", "note"})
    assert box.ends == frozenset({"transfer_to_human_agents"})
    assert box.policy == env.capability.policy_text()
    assert box.schemas == env.tools
    assert tc.TinyOrdersEnv().toolbox is box  # built once per capability, shared by its envs


def test_toolbox_run_calls_a_tool_as_the_env_does() -> None:
    env = tc.TinyOrdersEnv()
    env.reset(seed=3, options={"task": "cancel"})
    db = env.initial_copy()
    obs, ok, bug = env.toolbox.run(db, "note", {"text": "hi"})
    assert (obs, ok, bug) == ("noted", True, None) and db["notes"] == ["hi"]
    obs, ok, bug = env.toolbox.run(db, "note", {})
    assert not ok and bug is None and obs.startswith("Error: ")
    obs, ok, bug = env.toolbox.run(db, "nope", {})
    assert not ok and obs.startswith("Error: unknown tool `nope`")
    obs, ok, bug = env.toolbox.run(db, "broken_tool", {})
    assert not ok and bug is not None and "broken_tool" in bug


def test_no_module_outside_the_runtime_reaches_the_private_box() -> None:
    private = re.compile(r"\._box\b")
    offenders = [str(p.relative_to(ROOT)) for folder in ("tracec", "benchmarks", "tests")
                 for p in sorted((ROOT / folder).rglob("*.py"))
                 if p.parent.name != "runtime" or p.parts[-3] != "tracec"
                 if p.name != Path(__file__).name and private.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
    assert "_box" in (ROOT / "tracec/runtime/env.py").read_text(encoding="utf-8")
    assert isinstance(CapabilityEnv.toolbox, property)
