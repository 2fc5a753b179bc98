"""A :class:`~tracec.checks.diff.compare.DiffReport` as markdown fit for a PR comment.

Every text that comes from a spec is shown inside a code span (`|` escaped for tables), so a
spec cannot inject markup, mentions or links into the comment.
"""

from __future__ import annotations

import difflib

from tracec.checks.diff.compare import DiffReport, Example, TaskSummary, VersionSummary, short
from tracec.checks.prompt_size import CHARS_PER_TOKEN

MAX_TASK_ROWS = 40  # tasks listed per section; the rest are counted
MAX_LIST_ITEMS = 8  # gold calls / forbids shown per task and version


def code(text: str, limit: int = 200) -> str:
    """``text`` as an inline code span safe in a table cell."""
    t = short(text, limit).replace("|", "\\|")
    if not t:
        return "—"
    fence = "``" if "`" in t else "`"
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def _num(x: float) -> str:
    return f"{x:g}"


def _share(t: TaskSummary, s: VersionSummary) -> str:
    total = sum(x.weight for x in s.tasks)
    return f"{t.weight / total:.0%}" if total > 0 else "-"


def _items(xs: list[str]) -> str:
    if not xs:
        return "—"
    shown = "<br>".join(code(x, 100) for x in xs[:MAX_LIST_ITEMS])
    return shown + (f"<br>… {len(xs) - MAX_LIST_ITEMS} more" if len(xs) > MAX_LIST_ITEMS else "")


def _changed_items(before: list[str], after: list[str]) -> str:
    """A list before -> after, line by line: kept items plain, removed ones `−`, added `+`."""
    rows: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(
        a=before, b=after, autojunk=False
    ).get_opcodes():
        if op == "equal":
            rows += [code(x, 100) for x in before[i1:i2]]
            continue
        rows += [f"− {code(x, 160)}" for x in before[i1:i2]]
        rows += [f"+ {code(x, 160)}" for x in after[j1:j2]]
    more = len(rows) - 2 * MAX_LIST_ITEMS
    return "<br>".join(rows[: 2 * MAX_LIST_ITEMS]) + (f"<br>… {more} more" if more > 0 else "")


def _tasks(r: DiffReport) -> list[str]:
    old = {t.name: t for t in r.before.tasks}
    new = {t.name: t for t in r.after.tasks}
    if not r.tasks:
        total_b = sum(t.weight for t in r.before.tasks)
        n = len(r.after.tasks)
        return [
            f"Tasks: no change ({n} task{'s' if n != 1 else ''}, total weight {_num(total_b)}).",
            "",
        ]
    out = [
        "### Tasks",
        "",
        "| task | change | weight | gold calls | forbids |",
        "|---|---|---|---|---|",
    ]
    for c in r.tasks[:MAX_TASK_ROWS]:
        a: TaskSummary | None = old.get(c.name)
        b: TaskSummary | None = new.get(c.name)
        if c.change == "added" and b is not None:
            out.append(
                f"| {code(c.name)} | added | {_num(b.weight)} | {_items(b.gold)} | {_items(b.forbid)} |"
            )
        elif c.change == "removed" and a is not None:
            out.append(
                f"| {code(c.name)} | removed | ~~{_num(a.weight)}~~ | {_items(a.gold)} | {_items(a.forbid)} |"
            )
        elif a is not None and b is not None:
            weight = (
                _num(b.weight)
                if a.weight == b.weight
                else (
                    f"{_num(a.weight)} → {_num(b.weight)} ({_share(a, r.before)} → {_share(b, r.after)})"
                )
            )
            gold = _items(b.gold) if a.gold == b.gold else _changed_items(a.gold, b.gold)
            forbid = (
                _items(b.forbid) if a.forbid == b.forbid else _changed_items(a.forbid, b.forbid)
            )
            what = "changed: " + ", ".join(c.fields)
            out.append(f"| {code(c.name)} | {what} | {weight} | {gold} | {forbid} |")
    if len(r.tasks) > MAX_TASK_ROWS:
        out.append(f"\n… and {len(r.tasks) - MAX_TASK_ROWS} more task changes (see `--json`).")
    texts = []
    for c in r.tasks[:MAX_TASK_ROWS]:
        a, b = old.get(c.name), new.get(c.name)
        if a is None or b is None:
            continue
        for f in ("user", "hint", "communicate"):
            if f in c.fields:
                x, y = getattr(a, f), getattr(b, f)
                x, y = (", ".join(x), ", ".join(y)) if isinstance(x, list) else (x, y)
                texts.append(f"- {code(c.name)} {f}: {code(x, 100)} → {code(y, 100)}")
    if texts:
        out += ["", *texts]
    out.append("")
    return out


def _ladder(r: DiffReport) -> list[str]:
    def rung(s: VersionSummary, i: int) -> str:
        if i >= len(s.rules):
            return "—"
        rule = s.rules[i]
        return code(rule.text, 150) + (" (fractional)" if rule.fractional else "")

    if not r.rules_changed:
        levels = ", ".join(_num(x.level) for x in r.after.rules)
        return [f"Reward ladder: no change ({len(r.after.rules)} rules, levels {levels}).", ""]
    out = ["### Reward ladder", "", "| # | before | after |", "|---|---|---|"]
    for i in range(max(len(r.before.rules), len(r.after.rules))):
        a, b = rung(r.before, i), rung(r.after, i)
        ra, rb = r.before.rules[i : i + 1], r.after.rules[i : i + 1]
        same = bool(ra and rb) and ra[0].sha256 == rb[0].sha256
        mark = "" if same else " **≠**"
        out.append(f"| {i + 1}{mark} | {a} | {b} |")
    out.append("")
    return out


def _settings(r: DiffReport) -> list[str]:
    a, b = r.before, r.after
    sizes = (a.prompt_tokens, b.prompt_tokens, a.prompt_tool_tokens, b.prompt_tool_tokens)
    if None in sizes:
        why = "; ".join(f"{v.label}: {v.prompt_error}" for v in (a, b) if v.prompt_error)
        out = [f"First prompt: not measured ({code(why, 200)})."]
    else:
        out = [_prompt(*sizes, b.prompt_method)]  # type: ignore[arg-type]
    for k in r.settings_changed:
        out.append(f"- {k}: {code(a.settings.get(k, ''), 80)} → {code(b.settings[k], 80)}")
    out.append("")
    return out


def _variants(r: DiffReport) -> list[str]:
    old = {v.name: v for v in r.before.variants}
    new = {v.name: v for v in r.after.variants}
    if not old and not new:
        return []
    if not r.variants_changed:
        sizes = ", ".join(f"{code(v.name)} {v.prompt_tokens} tokens" for v in new.values())
        return [f"Variants: no change ({sizes}).", ""]
    out = ["Variants (the same world, tasks and rewards, another prompt):"]
    for name in r.variants_changed[:MAX_TASK_ROWS]:
        a, b = old.get(name), new.get(name)
        if a is None or b is None:
            v = b or a
            if v is None:  # pragma: no cover - a changed variant is in one version at least
                continue
            what = "added" if a is None else "removed"
            out.append(f"- {code(name)}: {what} ({v.prompt_tokens} tokens)")
            continue
        sizes = (a.prompt_tokens, b.prompt_tokens, a.prompt_tool_tokens, b.prompt_tool_tokens)
        if None in sizes:
            line = f"first prompt not measured ({code(b.prompt_error or a.prompt_error, 120)})"
        else:
            line = _prompt(*sizes, r.after.prompt_method).removeprefix("First prompt: ")  # type: ignore[arg-type]
            line = "first prompt " + line.rstrip(".")
        changed = [k for k in b.settings if a.settings.get(k) != b.settings[k]]
        line += "".join(
            f"; {k} {code(a.settings.get(k, ''), 60)} → {code(b.settings[k], 60)}" for k in changed
        )
        out.append(f"- {code(name)}: {line}")
    out.append("")
    return out


def _prompt(before: int, after: int, tools_before: int, tools_after: int, method: str) -> str:
    how = (
        f"estimated: characters / {CHARS_PER_TOKEN:g}"
        if method == "estimate"
        else f"counted with {method}"
    )
    delta = after - before
    if not delta and tools_before == tools_after:
        return f"First prompt: {after} tokens, no change ({how})."
    pct = f", {delta / before:+.1%}" if before and delta else ""
    return (
        f"First prompt: {before} → {after} tokens ({delta:+d}{pct}; "
        f"tool schemas {tools_before} → {tools_after}; {how})."
    )


def _example(e: Example | None) -> str:
    if e is None:
        return ""
    where = f"seed {e.seed}" + (f", task {code(e.task)}" if e.task else "")
    where += f", {code(e.what, 60)}" if e.what else ""
    return f"{where}: {code(e.before)} → {code(e.after)}"


def _behaviour(r: DiffReport) -> list[str]:
    span = f"seeds {r.first_seed}–{r.first_seed + r.seeds - 1}"
    tasks = len(r.compared_tasks)
    if not r.behaviour_changed:
        plural = "s" if tasks != 1 else ""
        return [
            (
                f"**No change in behaviour on {r.seeds} seeds** ({span}, {tasks} task{plural} "
                "compared: worlds, task instances, gold actions, oracle and probe rewards)."
            ),
            "",
        ]
    out = [
        f"### Behaviour on {r.seeds} seeds ({span}; {tasks} task{'s' if tasks != 1 else ''} in both versions)",
        "",
        "| what | differ | example (before → after) |",
        "|---|---|---|",
    ]
    for row in r.behaviour:
        share = f"{row.differ} of {row.compared} {row.unit}"
        out.append(f"| {row.name} | {share} | {_example(row.example) or '—'} |")
    out.append("")
    return out


def render_markdown(r: DiffReport) -> str:
    """The whole comment."""
    a, b = r.before, r.after
    name = (
        code(b.capability)
        if a.capability == b.capability
        else f"{code(a.capability)} → {code(b.capability)}"
    )
    head = [f"## `tracec diff` {name}", "", f"{code(a.label)} → {code(b.label)}", ""]
    body = head + _tasks(r) + _ladder(r) + _settings(r) + _variants(r) + _behaviour(r)
    return "\n".join(body).rstrip() + "\n"
