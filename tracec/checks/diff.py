"""``tracec diff``: what a spec change does, as markdown for the reviewer of a pull request.

Two versions of one spec (two files, or a file and a git revision of it) are compiled; the
report compares what they declare (tasks and weights, the reward ladder, gold and forbidden
tools per task, the first prompt's size) and what they do over a fixed set of seeds: for each
seed both envs are reset alike and the drawn task, the user's words, the world, the gold calls
and the oracle's and probes' rewards are compared, with the first seed where each differs.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracec.checks.probes import build_probes, gold_results, run_turns
from tracec.checks.prompt_size import first_prompt_size
from tracec.compiler.api import compile_text
from tracec.harness.resolve import env_class
from tracec.runtime.env import SpecRuntimeError

DEFAULT_SEEDS = 20


class DiffError(Exception):
    """A version that cannot be read or compiled (the message says which and why)."""


@dataclass
class Version:
    label: str
    cls: Any


def read_revision(path: Path, rev: str) -> str:
    """The text of ``path`` at git revision ``rev`` (``git show REV:PATH``)."""
    folder = path.resolve().parent
    try:
        top = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        rel = path.resolve().relative_to(Path(top).resolve()).as_posix()
        return subprocess.run(["git", "-C", top, "show", f"{rev}:{rel}"], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, ValueError) as exc:
        raise DiffError(f"{path}: cannot read revision {rev!r}: {exc}") from None
    except subprocess.CalledProcessError as exc:
        why = (exc.stderr or "").strip().splitlines()
        raise DiffError(f"{path}: cannot read revision {rev!r}: {why[-1] if why else exc}") from None


def compile_version(text: str, label: str, base_dir: Path) -> Version:
    result = compile_text(text, label, base_dir=base_dir)
    if not result.ok:
        raise DiffError(f"{label} does not compile:\n{result.rendered}")
    return Version(label, env_class(result.module))


@dataclass
class SeedDiff:
    """How many seeds differ in each respect, and the first example of each."""

    seeds: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, what: str, seed: int, example: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1
        self.examples.setdefault(what, f"seed {seed}: {example}")


def _calls(inst: Any) -> list[str]:
    return [f"{c.name}({', '.join(f'{k}={v!r}' for k, v in (c.args or {}).items())})"
            for c in inst.gold]


def _short(x: Any, n: int = 120) -> str:
    text = str(x)
    return text if len(text) <= n else text[: n - 1] + "…"


def _episode(cls: Any, seed: int) -> tuple[Any, Any, dict[str, float]] | str:
    env = cls()
    try:
        env.reset(seed=seed)
    except SpecRuntimeError as exc:
        return f"reset fails: {str(exc).splitlines()[0]}"
    inst = env.instance
    rewards = {}
    for probe in build_probes(inst, env._box.writes, env._box.ends, env._box.tools,
                              results=gold_results(env)):
        if probe.name not in {"oracle", "noop", "silent_gold", "gold_minus_one", "echo"}:
            continue
        env.restart()
        rewards[probe.name] = run_turns(env, probe.turns).reward
    return env, inst, rewards


def compare_seeds(old: Any, new: Any, seeds: int) -> SeedDiff:
    out = SeedDiff(seeds=seeds)
    for seed in range(seeds):
        a, b = _episode(old, seed), _episode(new, seed)
        if isinstance(a, str) or isinstance(b, str):
            if a != b:
                out.add("resets", seed, f"{a if isinstance(a, str) else 'ok'} → "
                                        f"{b if isinstance(b, str) else 'ok'}")
            continue
        (ea, ia, ra), (eb, ib, rb) = a, b
        if ea.initial_db != eb.initial_db:
            keys = sorted(k for k in set(ea.initial_db) | set(eb.initial_db)
                          if ea.initial_db.get(k) != eb.initial_db.get(k))
            out.add("worlds", seed, "collections " + ", ".join(f"`{k}`" for k in keys) + " differ")
        if ia.task != ib.task:
            out.add("tasks drawn", seed, f"`{ia.task}` → `{ib.task}`")
        elif ia.user != ib.user:
            out.add("user texts", seed, f"{_short(ia.user)!r} → {_short(ib.user)!r}")
        if _calls(ia) != _calls(ib):
            out.add("gold actions", seed, f"{_short('; '.join(_calls(ia)))} → "
                                          f"{_short('; '.join(_calls(ib)))}")
        if dict(ia.communicate) != dict(ib.communicate):
            out.add("answers", seed, f"{_short(dict(ia.communicate))} → {_short(dict(ib.communicate))}")
        changed = [k for k in ra if k in rb and abs(ra[k] - rb[k]) > 1e-9]
        if changed:
            out.add("probe rewards", seed, ", ".join(f"{k} {ra[k]:.2f} → {rb[k]:.2f}" for k in changed))
    return out


def _tasks(cls: Any) -> dict[str, float]:
    return {t.name: float(t.weight) for t in cls.capability.tasks}


def _tools_by_task(cls: Any, seeds: int) -> dict[str, tuple[list[str], list[str]]]:
    """task -> (gold tools, forbidden tools) seen over the seeds, in first-seen order."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    env = cls()
    for t in cls.capability.tasks:
        gold: list[str] = []
        forbid: list[str] = []
        for seed in range(min(seeds, 5)):
            try:
                env.reset(seed=seed, options={"task": t.name})
            except SpecRuntimeError:
                continue
            gold += [c.name for c in env.instance.gold if c.name not in gold]
            forbid += [c.name for c in env.instance.forbid if c.name not in forbid]
        out[t.name] = (gold, forbid)
    return out


def diff_markdown(old: Version, new: Version, seeds: int = DEFAULT_SEEDS) -> str:
    """The reviewer's report of ``old`` → ``new``."""
    lines = [f"## `tracec diff` {old.label} → {new.label}", ""]
    ta, tb = _tasks(old.cls), _tasks(new.cls)
    rows = []
    for name in list(ta) + [n for n in tb if n not in ta]:
        wa, wb = ta.get(name), tb.get(name)
        if wa == wb:
            continue
        what = "added" if wa is None else "removed" if wb is None else "weight changed"
        rows.append(f"| `{name}` | {what} | {'' if wa is None else f'{wa:g}'} | "
                    f"{'' if wb is None else f'{wb:g}'} |")
    lines.append("### Tasks")
    lines += (["", "| task | change | weight before | weight after |", "|---|---|---:|---:|", *rows]
              if rows else ["", f"unchanged ({len(ta)} tasks, same weights)"])
    ra = [r.text for r in old.cls.capability.rules]
    rb = [r.text for r in new.cls.capability.rules]
    lines += ["", "### Reward ladder", ""]
    if ra == rb:
        lines.append(f"unchanged ({len(ra)} rules)")
    else:
        lines += ["before:", "```", *ra, "```", "after:", "```", *rb, "```"]
    ga, gb = _tools_by_task(old.cls, seeds), _tools_by_task(new.cls, seeds)
    tool_rows = []
    for name in sorted(set(ga) & set(gb)):
        if ga[name] != gb[name]:
            tool_rows.append(f"| `{name}` | {', '.join(ga[name][0]) or '-'} → {', '.join(gb[name][0]) or '-'} "
                             f"| {', '.join(ga[name][1]) or '-'} → {', '.join(gb[name][1]) or '-'} |")
    lines += ["", "### Gold and forbidden tools", ""]
    lines += (["| task | gold tools | forbidden tools |", "|---|---|---|", *tool_rows]
              if tool_rows else ["unchanged for the tasks in both versions"])
    pa = first_prompt_size(old.cls()).tokens
    pb = first_prompt_size(new.cls()).tokens
    lines += ["", "### First prompt", "",
              f"{pa} → {pb} tokens (largest over seeds 0–7, estimated as characters / 3.8)"
              + ("" if pa != pb else "; unchanged")]
    d = compare_seeds(old.cls, new.cls, seeds)
    lines += ["", f"### Behaviour over seeds 0–{seeds - 1}", ""]
    if not d.counts:
        lines.append(f"identical on all {seeds} seeds: worlds, tasks drawn, user texts, gold "
                     "actions, answers and probe rewards")
    else:
        lines += ["| differs | seeds | first example |", "|---|---:|---|"]
        for what in ("resets", "worlds", "tasks drawn", "user texts", "gold actions", "answers",
                     "probe rewards"):
            if what in d.counts:
                example = d.examples[what].replace("|", "\\|")
                lines.append(f"| {what} | {d.counts[what]} of {seeds} | {example} |")
    return "\n".join(lines) + "\n"
