"""``RUN_DIR/report.md`` (+ PNG plots) from the stage manifests and outputs of a ``tracec run``.

``tracec report RUN_DIR`` regenerates it: :func:`is_run_dir` tells a run folder from a training
folder, :func:`write_report` writes the report and returns its path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracec.pipeline.manifest import StageManifest, read_manifest

REPORT = "report.md"
CONFIG_COPY = "run_config.json"
STAGES = ("baseline", "analyze", "specs", "compile", "train", "compose", "final_eval", "grpo_target")
SECTIONS = ("Stages", "Selected capabilities", "Specs", "Environment checks", "Training",
            "Routing", "Pass rates", "Rollouts spent", "What failed and why")


def is_run_dir(path: str | Path) -> bool:
    """Whether ``path`` is a ``tracec run`` folder (its config copy or a stage manifest)."""
    p = Path(path)
    return (p / CONFIG_COPY).is_file() or any((p / s / "manifest.json").is_file() for s in STAGES)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(x: Any) -> str:
        if isinstance(x, float):
            return f"{x:.3f}"
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(x) for x in r) + " |" for r in rows]
    return "\n".join(lines)


def _rel(run_dir: Path, path: str | Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(run_dir.resolve()))
    except ValueError:
        return str(path)


def _outputs(ms: dict[str, StageManifest | None], stage: str) -> dict:
    m = ms.get(stage)
    return (m.outputs or {}) if m and m.status == "done" else {}


# ---------------------------------------------------------------------------- sections
def _stages(ms: dict[str, StageManifest | None]) -> str:
    rows = []
    for s in STAGES:
        m = ms.get(s)
        if m is None:
            rows.append([s, "not run", "", "", ""])
        else:
            rows.append([s, m.status, f"{m.seconds:.1f}", m.attempts, m.note or m.error or ""])
    total = sum(m.seconds for m in ms.values() if m)
    return _table(["stage", "status", "seconds", "attempts", "note"], rows) + \
        f"\n\nTotal stage time: {total:.1f} s ({total / 60:.1f} min)."


def _capabilities(run_dir: Path, ms: dict) -> str:
    entries = _load_json(run_dir / "analyze" / "capabilities_all.json")
    if not entries:
        return "_No analysis yet._"
    out = _outputs(ms, "analyze")
    rows = [[e["skill"], f"{e['mean_cov']:.3f} ± {e['std_cov']:.3f}",
             f"{e['mean_delta']:+.3f} ± {e['std_delta']:.3f}",
             f"{e['n_runs_passed']}/{e['n_runs_total']}", "yes" if e["passes_consistency"] else "no"]
            for e in entries]
    head = (f"{out.get('trajectories', '?')} baseline trajectories, {out.get('failed', '?')} failed; "
            f"{out.get('runs', '?')} labeling run(s), K = {out.get('k', '?')}.\n\n")
    text = head + _table(["capability", "Cov (mean ± std)", "Δ (mean ± std)", "runs passed",
                          "selected"], rows)
    if (run_dir / "analyze" / "coverage.png").is_file():
        text += "\n\n![coverage](analyze/coverage.png)"
    return text


def _specs(ms: dict) -> str:
    m = ms.get("specs")
    if m is None:
        return "_Not run yet._"
    out = m.outputs or {}
    serves = out.get("serves") or {}
    if not serves:
        return f"_No spec chosen._ {m.note or ''}"
    rows = [[name, ", ".join(caps) or "(train_all_specs)"] for name, caps in serves.items()]
    text = _table(["spec (capability env)", "serves selected capabilities"], rows)
    if out.get("unmatched"):
        text += "\n\nSelected capabilities with no spec: " + ", ".join(out["unmatched"]) + \
            " (add a spec, or map them with `specs.mapping`)."
    return text


def _checks(run_dir: Path) -> str:
    checks = _load_json(run_dir / "compile" / "checks.json")
    if not checks:
        return "_No env checked._"
    rows = [[name, "pass" if c.get("passed") else "FAIL", c.get("check_env"), c.get("determinism"),
             c.get("probes"), f"{c.get('levels_reached')}/{c.get('levels_total')}",
             f"{c.get('variance_share', 0):.2f}", "; ".join(c.get("problems") or [])[:200]]
            for name, c in sorted(checks.items())]
    return _table(["env", "result", "check_env", "determinism", "probes", "levels", "variance share",
                   "problems"], rows)


def _training(run_dir: Path, ms: dict) -> str:
    adapters = _outputs(ms, "train").get("adapters") or {}
    if not adapters:
        return "_No adapter trained._"
    rows, pics = [], []
    for cap, a in sorted(adapters.items()):
        f = a.get("final") or {}
        rows.append([cap, a.get("steps"), a.get("rollouts"), f.get("reward_mean", float("nan")),
                     f.get("success_rate", float("nan")), f.get("kept_share", float("nan"))])
        if Path(a.get("curves", "")).is_file():
            pics.append(f"![{cap}]({_rel(run_dir, a['curves'])})")
    return _table(["adapter", "steps", "rollouts", "last reward", "last success", "last kept share"],
                  rows) + ("\n\n" + "\n".join(pics) if pics else "")


def _routing(run_dir: Path, ms: dict) -> str:
    out = _outputs(ms, "compose")
    if not out:
        m = ms.get("compose")
        return f"_No composed model._ {m.note or m.error or '' if m else ''}"
    routing = out.get("routing") or {}
    slots = routing.get("slots") or out.get("slots") or []
    counts = routing.get("counts") or []
    totals = [sum(row[i] for row in counts) for i in range(len(slots))] if counts else []
    n = sum(totals) or 1
    rows = [[s, t, t / n] for s, t in zip(slots, totals)]
    text = (f"{out.get('demos', '?')} oracle demonstrations, {out.get('demos_used', '?')} used; "
            f"{out.get('steps', '?')} gate step(s).\n\nShare of routed tokens per slot (all layers):\n\n"
            + _table(["slot", "tokens", "share"], rows))
    ce = out.get("ce") or {}
    if ce:
        text += "\n\nAssistant-token cross-entropy on the demonstrations:\n\n" + _table(
            ["model", "CE"], [[("base (no adapter)" if k == "<none>" else k), v] for k, v in ce.items()])
    if totals and _bar_plot(run_dir / "routing.png", slots, [t / n for t in totals],
                            "routing: share of tokens per slot", "share"):
        text += "\n\n![routing](routing.png)"
    return text


def pass_rate_rows(ms: dict) -> list[dict]:
    """One row per evaluated model: label, split, pass rate, reward, episodes, training rollouts."""
    rows = []
    base = _outputs(ms, "baseline")
    if base:
        rows.append({"model": "base (baseline, train split)", "split": "train", **_ev(base), "rollouts": 0})
    adapters = _outputs(ms, "train").get("adapters") or {}
    comp = _outputs(ms, "compose")
    for label, r in (_outputs(ms, "final_eval").get("results") or {}).items():
        if label.startswith("adapter-"):
            spent = (adapters.get(label.removeprefix("adapter-")) or {}).get("rollouts", 0)
        elif label == "composed":
            spent = sum(a.get("rollouts", 0) for a in adapters.values()) + int(comp.get("demos", 0))
        else:
            spent = 0
        rows.append({"model": label, "split": "test", **_ev(r), "rollouts": spent})
    g = _outputs(ms, "grpo_target")
    if g.get("eval"):
        rows.append({"model": "GRPO on target", "split": "test", **_ev(g["eval"]),
                     "rollouts": g.get("rollouts", 0)})
    return rows


def _ev(r: dict) -> dict:
    return {"pass_rate": r.get("pass_rate", 0.0), "avg_reward": r.get("avg_reward", 0.0),
            "episodes": r.get("episodes", 0)}


def _pass_rates(run_dir: Path, ms: dict) -> str:
    rows = pass_rate_rows(ms)
    if not rows:
        return "_No evaluation yet._"
    text = _table(["model", "split", "episodes", "pass rate", "avg reward", "training rollouts"],
                  [[r["model"], r["split"], r["episodes"], r["pass_rate"], r["avg_reward"],
                    r["rollouts"]] for r in rows])
    text += ("\n\nTraining rollouts: GRPO episodes behind the model (the composed model also counts "
             "its adapters' episodes and the oracle demonstrations).")
    m = ms.get("grpo_target")
    if m is not None and m.status == "skipped":
        text += f"\n\nGRPO-on-target baseline: {m.note}"
    paired = _paired(run_dir, ms)
    if paired:
        text += "\n\n" + paired
    test = [r for r in rows if r["split"] == "test"]
    if test and _bar_plot(run_dir / "pass_rates.png", [r["model"] for r in test],
                          [r["pass_rate"] for r in test], "pass rate on the test split", "pass rate"):
        text += "\n\n![pass rates](pass_rates.png)"
    return text


REPORT_RESAMPLES = 2000


def _paired(run_dir: Path, ms: dict) -> str:
    """B − A for every pair of test-split models evaluated on the same tasks (paired bootstrap)."""
    from itertools import combinations

    from tracec.harness.results import ResultsError
    from tracec.targets.compare import UnpairedRuns, compare_runs

    runs = {label: r["trajectories"] for label, r in (_outputs(ms, "final_eval").get("results") or {}).items()
            if r.get("trajectories")}
    g = _outputs(ms, "grpo_target")
    if (g.get("eval") or {}).get("trajectories"):
        runs["GRPO on target"] = g["eval"]["trajectories"]
    rows, skipped = [], []
    for (la, pa), (lb, pb) in combinations(runs.items(), 2):
        try:
            o = compare_runs(pa, pb, resamples=REPORT_RESAMPLES)["overall"]
        except (UnpairedRuns, ResultsError) as exc:
            skipped.append(f"{la} vs {lb}: {str(exc).split('.')[0]}")
            continue
        lo, hi = o["pass_ci"]
        rows.append([f"{lb} − {la}", o["tasks"], f"{o['pass_diff'] * 100:+.1f}",
                     f"[{lo * 100:+.1f}, {hi * 100:+.1f}]", f"{o['reward_diff']:+.3f}",
                     "yes" if lo <= 0 <= hi else "no"])
    if not rows and not skipped:
        return ""
    text = ("Paired differences (same tasks; paired bootstrap over tasks, "
            f"{REPORT_RESAMPLES} resamples, 95 % CI; `tracec compare A B` for per-task flips):\n\n")
    text += _table(["B − A", "tasks", "Δ pass (points)", "95 % CI", "Δ reward", "within noise"], rows) \
        if rows else ""
    if skipped:
        text += "\n\nNot compared (unpaired runs): " + "; ".join(skipped)
    return text


def _rollouts(ms: dict) -> str:
    base = _outputs(ms, "baseline").get("episodes", 0)
    train = _outputs(ms, "train").get("rollouts", 0)
    demos = _outputs(ms, "compose").get("demos", 0)
    final = sum(r.get("episodes", 0) for r in (_outputs(ms, "final_eval").get("results") or {}).values())
    g = _outputs(ms, "grpo_target")
    grpo = g.get("rollouts", 0) + (g.get("eval") or {}).get("episodes", 0)
    rows = [["baseline eval (target, train split)", base], ["adapter training (capability envs)", train],
            ["oracle demonstrations (compose)", demos], ["final eval (target, test split)", final],
            ["GRPO on target (train + eval)", grpo], ["total", base + train + demos + final + grpo]]
    return _table(["where", "episodes"], rows)


def _failures(run_dir: Path, ms: dict) -> str:
    lines = []
    for s in STAGES:
        m = ms.get(s)
        if m is None:
            lines.append(f"- **{s}**: not run yet.")
        elif m.status == "failed":
            detail = run_dir / s / "error.txt"
            lines.append(f"- **{s}** failed: {m.error}" +
                         (f" (traceback: `{_rel(run_dir, detail)}`)" if detail.is_file() else ""))
        elif m.status == "running":
            lines.append(f"- **{s}** did not finish (killed?); rerun `tracec run` to resume it.")
        elif m.status == "skipped":
            lines.append(f"- **{s}** skipped: {m.note}")
    rejected = _outputs(ms, "compile").get("rejected") or {}
    for env, problems in rejected.items():
        lines.append(f"- env **{env}** failed its checks and was not trained: {'; '.join(problems)}")
    trained = set(_outputs(ms, "train").get("adapters") or {})
    checked = set(_outputs(ms, "compile").get("envs") or {})
    if trained:
        for env in sorted(checked - trained):
            lines.append(f"- env **{env}** passed its checks but was not trained "
                         "(`train.max_adapters`).")
    for cap in _outputs(ms, "specs").get("unmatched") or []:
        lines.append(f"- selected capability **{cap}** has no spec, so no adapter targets it.")
    return "\n".join(lines) if lines else "Nothing failed."


def _bar_plot(path: Path, labels: list[str], values: list[float], title: str, ylabel: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        return False
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(labels)), 3.5))
    ax.bar(range(len(labels)), values, color="tab:blue")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, max(1.0, max(values, default=0) * 1.1))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def render_report(run_dir: str | Path) -> str:
    """The report's Markdown text (writes the PNG plots it links to)."""
    run_dir = Path(run_dir)
    ms = {s: read_manifest(run_dir, s) for s in STAGES}
    cfg = _load_json(run_dir / CONFIG_COPY) or {}
    model = (cfg.get("model") or {}).get("base", "?")
    target = cfg.get("target") or {}
    parts = [f"# tracec run report: {cfg.get('name', run_dir.name)}",
             (f"Base model `{model}`, target τ² {target.get('domain', '?')} "
              f"({target.get('train_split', '?')} split for analysis, "
              f"{target.get('test_split', '?')} for the final eval), user "
              f"`{target.get('user', '?')}`. Config: `{CONFIG_COPY}`.")]
    bodies = {
        "Stages": _stages(ms),
        "Selected capabilities": _capabilities(run_dir, ms),
        "Specs": _specs(ms),
        "Environment checks": _checks(run_dir),
        "Training": _training(run_dir, ms),
        "Routing": _routing(run_dir, ms),
        "Pass rates": _pass_rates(run_dir, ms),
        "Rollouts spent": _rollouts(ms),
        "What failed and why": _failures(run_dir, ms),
    }
    for title in SECTIONS:
        parts.append(f"## {title}\n\n{bodies[title]}")
    return "\n\n".join(parts) + "\n"


def write_report(run_dir: str | Path) -> Path:
    """Write ``RUN_DIR/report.md`` (and its plots); returns its path."""
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        raise FileNotFoundError(f"{run_dir} is not a `tracec run` folder (no {CONFIG_COPY})")
    path = run_dir / REPORT
    path.write_text(render_report(run_dir), encoding="utf-8")
    return path
