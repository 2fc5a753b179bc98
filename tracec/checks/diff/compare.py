"""Two compiled versions of a spec compared for `tracec diff`: what the change does.

Two compiled versions are compared twice over:

* as declared: tasks and weights, the reward ladder (rule texts and levels), each task's gold
  calls, forbids, communicated values and user text, settings (max_turns, hint, tools shown,
  policy, ...) and the first-prompt size (as `tracec check` measures it);
* in behaviour, on a fixed set of seeds (0..N-1): the task ``reset(seed)`` draws, and for
  every task both versions declare, the world of ``reset(seed, task)`` (its setup and
  distractors included), the drawn instance (user text, hint, communicated values, forbids,
  replies), the gold actions, and the rewards of the oracle and of the probes
  `tracec check` plays (:mod:`tracec.checks.probes`), each with one example of a difference.

Everything is bounded: at most :data:`MAX_SEEDS` seeds, examples shortened to
:data:`EXAMPLE_CHARS` characters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from tracec.checks.diff.ir_text import forbid_text, gold_texts, text_text
from tracec.checks.diff.source import Version
from tracec.checks.probes import build_probes, gold_results, run_turns
from tracec.checks.prompt_size import Counter, first_prompt_size
from tracec.compiler import ir as IR
from tracec.core.gcpause import old_objects_frozen
from tracec.harness.resolve import env_class
from tracec.runtime.env import CapabilityEnv
from tracec.runtime.lib import fmt
from tracec.runtime.world import same_json

DEFAULT_SEEDS = 32
MAX_SEEDS = 512
EXAMPLE_CHARS = 120
TOL = 1e-6

Progress = Callable[[int], None]


# ------------------------------------------------------------------ the report (JSON boundary)


class TaskSummary(BaseModel):
    """One task as declared (gold, forbids and texts as normalised spec text)."""

    name: str
    weight: float
    gold: list[str] = []
    forbid: list[str] = []
    communicate: list[str] = []
    user: str = ""
    hint: str = ""
    body_sha256: str = ""  # of the whole task, positions left out: other statements changed


class RuleSummary(BaseModel):
    level: float
    fractional: bool = False
    text: str  # as written
    sha256: str = ""  # of the rule's meaning (its IR, positions and layout left out)


class VariantSummary(BaseModel):
    """A `variant` env of the spec: what it shows and its first-prompt size."""

    name: str
    settings: dict[str, str]
    prompt_tokens: int | None
    prompt_tool_tokens: int | None
    prompt_error: str = ""


class VersionSummary(BaseModel):
    """One version of the spec as declared, and its first-prompt size."""

    label: str
    capability: str
    tasks: list[TaskSummary]
    rules: list[RuleSummary]
    settings: dict[str, str]
    prompt_tokens: int | None  # None: no first prompt (reset fails on seeds 0-7, see prompt_error)
    prompt_tool_tokens: int | None
    prompt_method: str
    prompt_error: str = ""
    variants: list[VariantSummary] = []


class Example(BaseModel):
    """One difference: where (seed, task, what) and the value before and after (shortened)."""

    seed: int
    task: str | None = None
    what: str = ""
    before: str
    after: str


class BehaviourRow(BaseModel):
    """How many of ``compared`` units (seeds or seed x task instances) differ."""

    key: Literal["task", "world", "instance", "gold", "oracle", "probes"]
    name: str
    unit: Literal["seeds", "task instances"]
    compared: int = 0
    differ: int = 0
    example: Example | None = None


class TaskChange(BaseModel):
    name: str
    change: Literal["added", "removed", "changed"]
    fields: list[str] = []  # for "changed": weight, gold, forbid, communicate, user, hint, other


class DiffReport(BaseModel):
    before: VersionSummary
    after: VersionSummary
    seeds: int
    first_seed: int = 0
    tasks: list[TaskChange] = []
    rules_changed: bool = False
    settings_changed: list[str] = []
    variants_changed: list[str] = []  # added, removed, or showing another prompt
    behaviour: list[BehaviourRow] = Field(default_factory=list)
    compared_tasks: list[str] = []

    @property
    def behaviour_changed(self) -> bool:
        return any(r.differ for r in self.behaviour)

    def to_dict(self) -> dict:
        out = self.model_dump()
        out["behaviour_changed"] = self.behaviour_changed
        return out


# ------------------------------------------------------------------ as declared


def short(value: Any, limit: int = EXAMPLE_CHARS) -> str:
    """A one-line text of ``value`` of at most ``limit`` characters."""
    text = value if isinstance(value, str) else _json(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _no_positions(x: Any) -> Any:
    if isinstance(x, dict):
        return {
            k: _no_positions(v) for k, v in x.items() if k not in {"line", "column", "fragment"}
        }
    if isinstance(x, list):
        return [_no_positions(v) for v in x]
    return x


def _sha(data: Any) -> str:
    return hashlib.sha256(_json(_no_positions(data)).encode("utf-8", "surrogatepass")).hexdigest()


def task_summary(t: IR.TaskIR) -> TaskSummary:
    return TaskSummary(
        name=t.name,
        weight=t.weight,
        gold=gold_texts(t.gold),
        forbid=[forbid_text(f) for f in t.forbid],
        communicate=[c.label for c in t.communicate],
        user=text_text(t.user),
        hint=text_text(t.hint),
        body_sha256=_sha(t.model_dump(exclude={"name", "weight"})),
    )


def settings_of(ir: IR.CapabilityIR) -> dict[str, str]:
    """The capability-level settings a reviewer cares about, as short texts."""
    return {
        "domain": ir.domain,
        "max_turns": str(ir.max_turns),
        "hint": short(ir.hint),
        "tools shown": "all" if ir.shown_tools is None else ", ".join(ir.shown_tools),
        "inline tools": ", ".join(t.name for t in ir.tools),
        "policy": (
            "domain policy"
            if ir.policy is None and ir.policy_sections is None
            else f"sections {', '.join(ir.policy_sections)}"
            if ir.policy is None
            else f"inline ({len(ir.policy)} chars, sha {hashlib.sha256(ir.policy.encode()).hexdigest()[:8]})"
        ),
        "compact_tools": str(ir.compact_tools).lower(),
        "seed block": _sha([s.model_dump() for s in ir.seed])[:12],
        "inline tool bodies": _sha([t.model_dump() for t in ir.tools])[:12],
    }


_VARIANT_SETTINGS = ("tools shown", "policy", "compact_tools")


def _prompt_size(
    module: Any, count: Counter | None, method: str
) -> tuple[int | None, int | None, str]:
    """(tokens, of which tool schemas, error): the env's largest first prompt on seeds 0-7."""
    try:
        size = first_prompt_size(env_class(module)(), count, method=method)
    except Exception as exc:  # noqa: BLE001 - a spec failing at run time is reported, not raised
        return None, None, _error(exc)
    return size.tokens, size.tool_tokens, ""


def variant_changes(before: VersionSummary, after: VersionSummary) -> list[str]:
    """Variants added, removed or showing another prompt (settings or size)."""
    old = {v.name: v for v in before.variants}
    new = {v.name: v for v in after.variants}
    return [n for n in [*old, *(n for n in new if n not in old)] if old.get(n) != new.get(n)]


def summarize(
    version: Version, count: Counter | None = None, method: str = "estimate"
) -> VersionSummary:
    """A version as declared, with its first prompt measured as `tracec check` does."""
    ir = version.ir
    tokens, tool_tokens, error = _prompt_size(version.module, count, method)
    variants = []
    for name, (vir, vmod) in version.variants.items():
        vt, vtt, verr = _prompt_size(vmod, count, method)
        shown = {k: v for k, v in settings_of(vir).items() if k in _VARIANT_SETTINGS}
        variants.append(
            VariantSummary(
                name=name,
                settings=shown,
                prompt_tokens=vt,
                prompt_tool_tokens=vtt,
                prompt_error=verr,
            )
        )
    return VersionSummary(
        variants=variants,
        label=version.label,
        capability=ir.name,
        tasks=[task_summary(t) for t in ir.tasks],
        rules=[
            RuleSummary(
                level=r.level,
                fractional=r.fractional,
                text=r.text,
                sha256=_sha(r.model_dump(exclude={"text"})),
            )
            for r in ir.rules
        ],
        settings=settings_of(ir),
        prompt_tokens=tokens,
        prompt_tool_tokens=tool_tokens,
        prompt_method=method,
        prompt_error=error,
    )


_TASK_FIELDS = ("weight", "gold", "forbid", "communicate", "user", "hint")


def task_changes(before: VersionSummary, after: VersionSummary) -> list[TaskChange]:
    old = {t.name: t for t in before.tasks}
    new = {t.name: t for t in after.tasks}
    out = [TaskChange(name=n, change="removed") for n in old if n not in new]
    out += [TaskChange(name=n, change="added") for n in new if n not in old]
    for name in (n for n in new if n in old):
        a, b = old[name], new[name]
        fields = [f for f in _TASK_FIELDS if getattr(a, f) != getattr(b, f)]
        if a.body_sha256 != b.body_sha256 and not (set(fields) - {"weight"}):
            fields.append("other")  # lets, replies, setup or distractors
        if fields:
            out.append(TaskChange(name=name, change="changed", fields=fields))
    return out


# ------------------------------------------------------------------ in behaviour


def _calls(calls: Any) -> list[dict]:
    return [{"name": c.name, "args": None if c.args is None else dict(c.args)} for c in calls]


def call_texts(calls: list[dict]) -> str:
    def one(c: dict) -> str:
        if c["args"] is None:
            return c["name"]
        return (
            f"{c['name']}(" + ", ".join(f"{k}={short(v, 40)}" for k, v in c["args"].items()) + ")"
        )

    return "; ".join(one(c) for c in calls) or "(none)"


class _Snapshot:
    """What one version does on one seed: the task ``reset(seed)`` draws, and per task what a
    forced reset draws (world, instance, gold) and what the oracle and probes get (``error: ...``
    where that reset fails)."""

    def __init__(self) -> None:
        self.task: str = ""
        self.world: dict[str, Any] = {}
        self.instance: dict[str, Any] = {}
        self.gold: dict[str, Any] = {}
        self.oracle: dict[str, Any] = {}
        self.probes: dict[str, Any] = {}


def _error(exc: BaseException, label: str = "") -> str:
    """The first line of the message, as ``error: ...`` (a located run-time error's
    ``LABEL:LINE:COL`` becomes ``line LINE:COL``, so that both versions failing alike compare
    equal)."""
    lines = str(exc).strip().splitlines()
    text = short(lines[0] if lines else type(exc).__name__, 300)
    if label and text.startswith(label + ":"):
        text = "line " + text[len(label) + 1 :]
    return text if ": error: " in text else "error: " + text


def _instance(inst: Any) -> dict[str, Any]:
    return {
        "user": inst.user,
        "hint": inst.hint,
        "communicate": {
            k: fmt(v) if not isinstance(v, (list, dict)) else v for k, v in inst.communicate.items()
        },
        "forbid": _calls(inst.forbid),
        "replies": [{"keywords": list(r.keywords), "text": r.text} for r in inst.replies],
        "distractors": list(inst.distractors),
    }


def _reward(ep: Any, rules: Any) -> dict[str, Any]:
    rule = None if ep.rule is None else f"rule {ep.rule + 1}: {short(rules[ep.rule].text, 60)}"
    return {"reward": round(ep.reward, 6), "rule": rule or ep.ended_by}


def snapshot(env: CapabilityEnv, seed: int, tasks: list[str], label: str = "") -> _Snapshot:
    """Play ``seed`` on ``env`` (the version ``label``): the unforced reset, then each of
    ``tasks`` forced."""
    snap = _Snapshot()
    try:
        _, info = env.reset(seed=seed)
        snap.task = info["task"]
    except Exception as exc:  # noqa: BLE001 - a spec that fails at run time is a difference
        snap.task = _error(exc, label)
    rules = env.capability.rules
    for name in tasks:
        try:
            env.reset(seed=seed, options={"task": name})
        except Exception as exc:  # noqa: BLE001 - as above
            err = _error(exc, label)
            snap.world[name] = snap.instance[name] = snap.gold[name] = err
            snap.oracle[name] = snap.probes[name] = err
            continue
        inst = env.instance
        snap.world[name] = env.initial_db  # the seed's world with the task's setup and distractors
        snap.instance[name] = _instance(inst)
        snap.gold[name] = _calls(inst.gold)
        box = env.toolbox
        probes = build_probes(inst, box.writes, box.ends, box.tools, rotate=seed,
                              results=gold_results(env))  # the echo probes too
        got: dict[str, Any] = {}
        for k, probe in enumerate(probes):
            if k:
                env.restart()
            got[probe.name] = _reward(run_turns(env, probe.turns), rules)
        snap.oracle[name] = got.pop("oracle", None)
        snap.probes[name] = got
    return snap


def _same(a: Any, b: Any) -> bool:
    return a is b or same_json(a, b)


def first_difference(a: Any, b: Any, path: str = "", depth: int = 0) -> tuple[str, Any, Any]:
    """Where two JSON-like values first differ: (path, "" at the top, value before, after)."""
    if depth < 12 and isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{path}.{k}".lstrip("."), a.get(k, "(absent)"), b.get(k, "(absent)")
            if not _same(a[k], b[k]):
                return first_difference(a[k], b[k], f"{path}.{k}", depth + 1)
    if depth < 12 and isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            if not _same(x, y):
                return first_difference(x, y, f"{path}[{i}]", depth + 1)
        if len(a) != len(b):
            return f"{path} (length)".lstrip("."), len(a), len(b)
    return path.lstrip("."), a, b


def _row_example(
    row: BehaviourRow,
    seed: int,
    task: str | None,
    a: Any,
    b: Any,
    render: Callable[[Any], str] | None = None,
    what: str | None = None,
) -> None:
    row.differ += 1
    if row.example is not None:
        return
    if render is not None:
        row.example = Example(
            seed=seed, task=task, what=what or "", before=short(render(a)), after=short(render(b))
        )
        return
    where, x, y = first_difference(a, b)
    row.example = Example(seed=seed, task=task, what=what or where, before=short(x), after=short(y))


def gold_difference(a: Any, b: Any) -> tuple[str, str, str]:
    """Where two gold-call lists first differ: (where, before, after). The same tool at the
    same place with other arguments names the argument; otherwise the whole calls are shown."""
    if isinstance(a, str) or isinstance(b, str):
        return (
            "",
            a if isinstance(a, str) else call_texts(a),
            b if isinstance(b, str) else call_texts(b),
        )
    for i in range(max(len(a), len(b))):
        x, y = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        if x is not None and y is not None and _same(x, y):
            continue
        if x is not None and y is not None and x["name"] == y["name"] and x["args"] and y["args"]:
            xa, ya = x["args"], y["args"]
            keys = list(xa) + [k for k in ya if k not in xa]
            k = next(k for k in keys if k not in xa or k not in ya or not _same(xa[k], ya[k]))
            vx, vy = xa.get(k, "(absent)"), ya.get(k, "(absent)")
            return f"call {i + 1} {x['name']}: {k}", short(vx), short(vy)
        return (
            f"call {i + 1}",
            call_texts([x]) if x else "(none)",
            call_texts([y]) if y else "(none)",
        )
    return "", call_texts(a), call_texts(b)  # pragma: no cover - only called when they differ


def _render_reward(v: Any) -> str:
    """One reward ``{reward, rule}``, or the rewards of every probe (``{probe: reward}``)."""
    if v is None or isinstance(v, str):
        return str(v)
    if "reward" not in v:
        return "; ".join(f"{k} {_render_reward(x)}" for k, x in v.items())
    return f"{v['reward']:.2f} ({v['rule']})"


def _probe_diff(a: Any, b: Any) -> tuple[str, Any, Any] | None:
    if isinstance(a, str) or isinstance(b, str):
        return None if a == b else ("", a, b)
    for name in list(a) + [n for n in b if n not in a]:
        x, y = a.get(name), b.get(name)
        if x is None or y is None:
            return (
                name,
                x if x is not None else "(no such probe)",
                y if y is not None else "(no such probe)",
            )
        if abs(x["reward"] - y["reward"]) > TOL:
            return name, x, y
    return None


def _reward_differs(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return abs(a["reward"] - b["reward"]) > TOL
    return a != b


def compare_behaviour(
    old: Version,
    new: Version,
    seeds: int = DEFAULT_SEEDS,
    first_seed: int = 0,
    progress: Progress | None = None,
) -> tuple[list[BehaviourRow], list[str]]:
    """The behaviour rows over seeds ``first_seed .. first_seed + seeds - 1``, and the tasks
    compared (those both versions declare)."""
    if not 1 <= seeds <= MAX_SEEDS:
        raise ValueError(f"seeds must be 1..{MAX_SEEDS}, got {seeds}")
    env_a, env_b = env_class(old.module)(), env_class(new.module)()
    names_b = {t.name for t in new.ir.tasks}
    tasks = [t.name for t in old.ir.tasks if t.name in names_b]
    drawn = BehaviourRow(key="task", name="task drawn by reset(seed)", unit="seeds")
    world = BehaviourRow(key="world", name="initial world", unit="task instances")
    inst = BehaviourRow(
        key="instance",
        name="task instance (user text, hint, values, forbids, replies)",
        unit="task instances",
    )
    gold = BehaviourRow(key="gold", name="gold actions", unit="task instances")
    oracle = BehaviourRow(key="oracle", name="oracle reward", unit="task instances")
    probes = BehaviourRow(
        key="probes",
        name="probe rewards (noop, silent_gold, gold_minus_one, forbidden)",
        unit="task instances",
    )
    with old_objects_frozen():
        for seed in range(first_seed, first_seed + seeds):
            a, b = snapshot(env_a, seed, tasks, old.label), snapshot(env_b, seed, tasks, new.label)
            drawn.compared += 1
            if a.task != b.task:
                _row_example(drawn, seed, None, a.task, b.task, render=str)
            for name in tasks:
                for row in (world, inst, gold, oracle, probes):
                    row.compared += 1
                if not _same(a.world[name], b.world[name]):
                    _row_example(world, seed, name, a.world[name], b.world[name])
                if not _same(a.instance[name], b.instance[name]):
                    _row_example(inst, seed, name, a.instance[name], b.instance[name])
                if not _same(a.gold[name], b.gold[name]):
                    where, x, y = gold_difference(a.gold[name], b.gold[name])
                    _row_example(gold, seed, name, x, y, render=str, what=where)
                if _reward_differs(a.oracle[name], b.oracle[name]):
                    _row_example(
                        oracle, seed, name, a.oracle[name], b.oracle[name], render=_render_reward
                    )
                hit = _probe_diff(a.probes[name], b.probes[name])
                if hit is not None:
                    _row_example(
                        probes,
                        seed,
                        name,
                        hit[1],
                        hit[2],
                        render=_render_reward,
                        what=hit[0] and f"probe {hit[0]}",
                    )
            if progress:
                progress(1)
    return [drawn, world, inst, gold, oracle, probes], tasks


def diff_versions(
    old: Version,
    new: Version,
    seeds: int = DEFAULT_SEEDS,
    count: Counter | None = None,
    method: str = "estimate",
    progress: Progress | None = None,
) -> DiffReport:
    """What changing ``old`` into ``new`` does, as declared and on ``seeds`` seeds."""
    before, after = summarize(old, count, method), summarize(new, count, method)
    rows, tasks = compare_behaviour(old, new, seeds, progress=progress)
    return DiffReport(
        before=before,
        after=after,
        seeds=seeds,
        tasks=task_changes(before, after),
        rules_changed=[r.sha256 for r in before.rules] != [r.sha256 for r in after.rules],
        settings_changed=[k for k in after.settings if before.settings.get(k) != after.settings[k]],
        variants_changed=variant_changes(before, after),
        behaviour=rows,
        compared_tasks=tasks,
    )
