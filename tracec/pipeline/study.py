"""``tracec report STUDY.json``: a study's arms against their training budget.

A study file is a JSON object::

    {"title": "…",                                  # optional
     "arms": [{"name": "composed", "method": "TRACE",
               "demos": 144, "rollouts": 64,         # or "episodes": 208 (demos + rollouts)
               "cpu_seconds": 2400,                  # optional: training CPU seconds
               "eval": "runs/eval/composed"          # a `tracec eval --out` folder, relative to
                                                      # the study file, or recorded figures:
               "success": 0.42, "ci": [0.32, 0.52], "n": 100}, …],
     "pairs": [{"a": "grpo_target", "b": "composed"},           # B − A from the two eval folders,
               {"a": "x", "b": "y", "diff": 0.1, "ci": [0.02, 0.18],    # or recorded
                "gained": 12, "lost": 2}]}                             # (counts optional)

:func:`load_study` validates it (one :class:`StudyError` line per mistake, naming the field);
:func:`write_study` draws success against episodes and against CPU seconds (one curve per
method, 95 % CI bars) and writes the markdown table beside it. Output files are refused unless
new or written by this command before (their tracec stamp).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracec import files
from tracec.files import InputError
from tracec.harness.results import ResultsError
from tracec.outputs import OutputError, refuse_input, write_atomic
from tracec.targets.compare import UnpairedRuns, compare_runs, load_run, paired_bootstrap

STAMP = "tracec report (study)"  # PNG "Software" metadata and the markdown's first line
MD_STAMP = f"<!-- written by {STAMP}; rerun it instead of editing -->"


class StudyError(InputError):
    """A study file that cannot be reported (the message names the file and the field)."""


@dataclass
class Arm:
    name: str
    method: str
    episodes: float
    success: float
    ci: tuple[float, float]
    n: int | None = None
    demos: float | None = None
    rollouts: float | None = None
    cpu_seconds: float | None = None
    eval: Path | None = None
    note: str = ""


@dataclass
class Pair:
    a: str
    b: str
    diff: float
    ci: tuple[float, float]
    gained: int | None = None
    lost: int | None = None


@dataclass
class Study:
    path: Path
    title: str
    arms: list[Arm]
    pairs: list[Pair] = field(default_factory=list)


def _number(rec: dict, key: str, where: str, lo: float = 0.0, hi: float = math.inf,
            required: bool = False) -> float | None:
    if key not in rec:
        if required:
            raise StudyError(f"{where}: `{key}` is missing")
        return None
    v = rec[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or not lo <= v <= hi:
        raise StudyError(f"{where}: `{key}` must be a number in [{lo:g}, {hi:g}], got {v!r:.40}")
    return float(v)


def _interval(rec: dict, key: str, where: str, lo: float, hi: float) -> tuple[float, float]:
    v = rec.get(key)
    if not (isinstance(v, list) and len(v) == 2):
        raise StudyError(f"{where}: `{key}` must be a list [low, high]")
    a = _number({"low": v[0]}, "low", f"{where}: `{key}`", lo, hi)
    b = _number({"high": v[1]}, "high", f"{where}: `{key}`", lo, hi)
    assert a is not None and b is not None
    if a > b:
        raise StudyError(f"{where}: `{key}` low {a:g} is above high {b:g}")
    return a, b


def _text(rec: dict, key: str, where: str, required: bool = True) -> str:
    v = rec.get(key, None if required else "")
    if not isinstance(v, str) or (required and not v.strip()):
        raise StudyError(f"{where}: `{key}` must be a non-empty string")
    return v


def _eval_figures(run: Path, where: str) -> tuple[float, tuple[float, float], int]:
    """Success rate, its 95 % bootstrap CI and the episode count of an eval folder."""
    try:
        _, episodes = load_run(run)
    except (ResultsError, InputError, OSError) as exc:
        raise StudyError(f"{where}: `eval`: {exc}") from None
    s = [float(e.success) for e in episodes]
    ci = paired_bootstrap([0.0] * len(s), s)
    return ci.diff, (ci.lo, ci.hi), len(s)


def _arm(rec: Any, where: str, base: Path) -> Arm:
    if not isinstance(rec, dict):
        raise StudyError(f"{where}: expected a JSON object")
    name, method = _text(rec, "name", where), _text(rec, "method", where)
    demos, rollouts = _number(rec, "demos", where), _number(rec, "rollouts", where)
    episodes = _number(rec, "episodes", where)
    if episodes is None:
        if demos is None and rollouts is None:
            raise StudyError(f"{where}: give `episodes` (or `demos` and/or `rollouts`)")
        episodes = (demos or 0.0) + (rollouts or 0.0)
    cpu = _number(rec, "cpu_seconds", where)
    run = None
    if "eval" in rec:
        run = base / _text(rec, "eval", where)
        success, ci, n = _eval_figures(run, where)
    else:
        if "success" not in rec:
            raise StudyError(f"{where}: give `eval` (a tracec eval folder) or `success` and `ci`")
        success = _number(rec, "success", where, 0.0, 1.0, required=True)
        ci = _interval(rec, "ci", where, 0.0, 1.0)
        n_raw = _number(rec, "n", where)
        n = int(n_raw) if n_raw is not None else None
    assert success is not None
    return Arm(name=name, method=method, episodes=episodes, success=success, ci=ci, n=n,
               demos=demos, rollouts=rollouts, cpu_seconds=cpu, eval=run,
               note=_text(rec, "note", where, required=False))


def _pair(rec: Any, where: str, arms: dict[str, Arm]) -> Pair:
    if not isinstance(rec, dict):
        raise StudyError(f"{where}: expected a JSON object")
    a, b = _text(rec, "a", where), _text(rec, "b", where)
    for x in (a, b):
        if x not in arms:
            raise StudyError(f"{where}: no arm named `{x}`")
    if "diff" in rec:
        diff = _number(rec, "diff", where, -1.0, 1.0, required=True)
        assert diff is not None
        moved = [_number(rec, k, where) for k in ("gained", "lost")]
        gained, lost = (int(m) if m is not None else None for m in moved)
        return Pair(a, b, diff, _interval(rec, "ci", where, -1.0, 1.0), gained, lost)
    ra, rb = arms[a].eval, arms[b].eval
    if ra is None or rb is None:
        raise StudyError(f"{where}: both arms need an `eval` folder, or give `diff` and `ci`")
    try:
        cmp = compare_runs(ra, rb)
    except (UnpairedRuns, ResultsError, InputError) as exc:
        raise StudyError(f"{where}: {exc}") from None
    o = cmp["overall"]
    return Pair(a, b, o["pass_diff"], tuple(o["pass_ci"]), len(cmp["gained"]), len(cmp["lost"]))


def load_study(path: str | Path) -> Study:
    """The validated study in ``path``; a :class:`StudyError` line for any mistake."""
    path = Path(path)
    data = files.read_json(path, "study file", expect=dict, error=StudyError)
    arms_raw = data.get("arms")
    if not isinstance(arms_raw, list) or not arms_raw:
        raise StudyError(f"{path}: `arms` must be a non-empty list")
    arms: dict[str, Arm] = {}
    for i, rec in enumerate(arms_raw):
        arm = _arm(rec, f"{path}: arms[{i}]", path.parent)
        if arm.name in arms:
            raise StudyError(f"{path}: arms[{i}]: a second arm named `{arm.name}`")
        arms[arm.name] = arm
    pairs_raw = data.get("pairs", [])
    if not isinstance(pairs_raw, list):
        raise StudyError(f"{path}: `pairs` must be a list")
    pairs = [_pair(rec, f"{path}: pairs[{i}]", arms) for i, rec in enumerate(pairs_raw)]
    title = data.get("title", path.stem)
    if not isinstance(title, str):
        raise StudyError(f"{path}: `title` must be a string")
    return Study(path, title, list(arms.values()), pairs)


def _ci_text(lo: float, hi: float, points: bool = False) -> str:
    if points:
        return f"[{lo * 100:+.1f}, {hi * 100:+.1f}]"
    return f"[{lo:.2f}, {hi:.2f}]"


def markdown(study: Study) -> str:
    """The arms table (and the paired differences) in markdown."""
    def num(x: float | None, fmt: str = ".0f") -> str:
        return "–" if x is None else format(x, fmt)

    lines = [MD_STAMP, "", f"### {study.title}", "",
             "| arm | method | demos | rollouts | episodes | train CPU s | success [95 % CI] | n |",
             "|---|---|---:|---:|---:|---:|---|---:|"]
    for a in study.arms:
        lines.append(f"| {a.name} | {a.method} | {num(a.demos)} | {num(a.rollouts)} | "
                     f"{num(a.episodes)} | {num(a.cpu_seconds)} | {a.success:.2f} "
                     f"{_ci_text(*a.ci)} | {num(a.n, 'd') if a.n is not None else '–'} |")
    if study.pairs:
        lines += ["", "| B − A | Δ success, points [95 % paired CI] | gained / lost |",
                  "|---|---|---|"]
        for p in study.pairs:
            moved = f"{p.gained} / {p.lost}" if p.gained is not None else "–"
            lines.append(f"| {p.b} − {p.a} | {p.diff * 100:+.1f} "
                         f"{_ci_text(*p.ci, points=True)} | {moved} |")
    return "\n".join(lines) + "\n"


def _plot(study: Study, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    methods = list(dict.fromkeys(a.method for a in study.arms))
    for ax, key, label in ((axes[0], "episodes", "training episodes (oracle demos + rollouts)"),
                           (axes[1], "cpu_seconds", "training CPU seconds")):
        for i, m in enumerate(methods):  # one colour per method in both panels
            pts = sorted(((getattr(a, key), a) for a in study.arms
                          if a.method == m and getattr(a, key) is not None), key=lambda p: p[0])
            if not pts:
                continue
            xs = [x for x, _ in pts]
            ys = [a.success for _, a in pts]
            err = [[a.success - a.ci[0] for _, a in pts], [a.ci[1] - a.success for _, a in pts]]
            ax.errorbar(xs, ys, yerr=err, fmt="o-", capsize=4, label=m, color=f"C{i % 10}")
            seen: dict[tuple[float, float], int] = {}
            for x, a in pts:  # arms on one point get their labels one under the other
                k = seen[(x, a.success)] = seen.get((x, a.success), -1) + 1
                ax.annotate(a.name, (x, a.success), textcoords="offset points",
                            xytext=(4, 4 - 10 * k), fontsize=7)
        ax.set_xlabel(label)
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success (95 % CI)")
    axes[0].legend(fontsize=8, loc="best")
    fig.suptitle(study.title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": STAMP})
    plt.close(fig)
    write_atomic(png, buf.getvalue())


def _ours(path: Path) -> bool:
    """Whether ``path`` is new or a file this command wrote (its stamp)."""
    if not path.exists():
        return True
    try:
        head = path.read_bytes()[:4096]
    except OSError:
        return False
    return MD_STAMP.encode() in head if path.suffix == ".md" else STAMP.encode() in head


def write_study(path: str | Path, png: str | Path | None = None) -> dict[str, Any]:
    """Draw and tabulate the study in ``path``; returns a JSON-ready summary."""
    study = load_study(path)
    png = Path(png) if png is not None else study.path.with_suffix(".png")
    if png.suffix.lower() != ".png":
        raise OutputError(f"{png}: the plot is a PNG file; name it NAME.png")
    md = png.with_suffix(".md")
    inputs = [study.path, *(a.eval for a in study.arms if a.eval is not None)]
    for out in (png, md):
        refuse_input(out, inputs)
        if not _ours(out) or out.is_dir():
            raise OutputError(f"{out}: exists and was not written by tracec report; "
                              "choose another -o (tracec never overwrites a file it did not write)")
    text = markdown(study)
    _plot(study, png)
    write_atomic(md, text)
    return {"study": str(study.path), "png": str(png), "markdown": str(md),
            "arms": [{"name": a.name, "method": a.method, "episodes": a.episodes,
                      "demos": a.demos, "rollouts": a.rollouts, "cpu_seconds": a.cpu_seconds,
                      "success": a.success, "ci": list(a.ci), "n": a.n} for a in study.arms],
            "pairs": [{"a": p.a, "b": p.b, "diff": p.diff, "ci": list(p.ci), "gained": p.gained,
                       "lost": p.lost} for p in study.pairs]}
