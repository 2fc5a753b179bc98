"""``RUN_DIR/report.md`` (+ PNG plots) from the stage manifests and outputs of a ``tracec run``.

``tracec report RUN_DIR`` regenerates it: :func:`is_run_dir` tells a run folder from a training
folder, :func:`write_report` writes the report and returns its path.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

from tracec.files import InputError
from tracec.harness.results import ResultsError
from tracec.outputs import write_atomic
from tracec.pipeline.manifest import (CONFIG_COPY, MANIFEST, StageManifest, manifest_path,
                                     read_manifest)
from tracec.pipeline.registry import STAGE_NAMES
from tracec.targets.compare import UnpairedRuns, compare_runs, load_run, paired_bootstrap
from tracec.targets.overlap import overlap_lines

REPORT = "report.md"
SECTIONS = ("Stages", "Selected capabilities", "Specs", "Environment checks", "Training",
            "Routing", "Held-out env seeds", "Pass rates", "Rollouts spent", "What failed and why")


def is_run_dir(path: str | Path) -> bool:
    """Whether ``path`` is a ``tracec run`` folder (its config copy or a stage manifest)."""
    p = Path(path)
    return (p / CONFIG_COPY).is_file() or any((p / s / MANIFEST).is_file() for s in STAGE_NAMES)


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
    def load(m: StageManifest) -> str:
        if m.load_start is None or m.load_end is None:
            return ""
        return f"{m.load_start:.2f} → {m.load_end:.2f}"

    rows = []
    for s in STAGE_NAMES:
        m = ms.get(s)
        if m is None:
            rows.append([s, "not run", "", "", "", "", ""])
        else:
            cpu = "" if m.cpu_seconds is None else f"{m.cpu_seconds:.1f}"
            rows.append([s, m.status, f"{m.seconds:.1f}", cpu, load(m), m.attempts, m.note or m.error or ""])
    done = [m for m in ms.values() if m]
    total = sum(m.seconds for m in done)
    line = f"\n\nTotal stage time: {total:.1f} s ({total / 60:.1f} min)."
    if done and all(m.cpu_seconds is not None for m in done):
        cpu = sum(m.cpu_seconds or 0.0 for m in done)
        loads = [x for m in done for x in (m.load_start, m.load_end) if x is not None]
        line += f" CPU time {cpu:.1f} s ({cpu / 60:.1f} min)"
        line += f"; 1-min load average {min(loads):.2f}–{max(loads):.2f}." if loads else "."
        line += (" CPU time well below the stage time means the run waited: for its cores (see the load)"
                 " or for a remote model.") if cpu < 0.8 * total else ""
    return _table(["stage", "status", "seconds", "CPU s", "load start → end", "attempts", "note"], rows) + line


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
    rows, pics, notes = [], [], []
    for cap, a in sorted(adapters.items()):
        sft = a.get("sft") or {}
        g = a.get("grpo") or {}
        u = a.get("update") or {}
        sft_cell = (f"{sft.get('steps')} steps, {sft.get('demos')} demos, loss "
                    f"{sft.get('loss_first', 0):.3f} → {sft.get('loss_last', 0):.3f}") if sft else "–"
        succ = ", ".join(f"{x:.2f}" for x in g.get("rollout_success") or [] if x is not None) or "–"
        change = (f"{u['grpo_param_change']:.4f} ({u['grpo_param_change_rel']:.2%})"
                  if "grpo_param_change" in u else "–")
        rows.append([cap, sft_cell, g.get("steps", a.get("steps")), a.get("rollouts"),
                     f"{g.get('kept_groups', '?')}/{g.get('groups', '?')}", g.get("updates", "?"),
                     g.get("trained_tokens", "?"), succ,
                     f"{u['delta_w_norm']:.3f}" if "delta_w_norm" in u else "?", change])
        if u.get("delta_w_norm") == 0:
            notes.append(f"**{cap}**: ‖ΔW‖ = 0: the adapter computes the base model's function "
                         "(no gradient step was taken).")
        elif g.get("steps") and not g.get("updates"):
            notes.append(f"**{cap}**: no GRPO group had reward variance, so GRPO made no update; "
                         "the change is the SFT warm start's.")
        if Path(a.get("curves", "")).is_file():
            pics.append(f"![{cap}]({_rel(run_dir, a['curves'])})")
    text = _table(["adapter", "SFT warm start", "GRPO steps", "GRPO episodes", "kept groups",
                   "GRPO updates", "trained tokens", "rollout success per step", "‖ΔW‖ (LoRA B·A)",
                   "GRPO change ‖θ−θ_sft‖ (rel.)"], rows)
    text += ("\n\nKept groups: GRPO groups with reward variance (a flat group has zero advantage "
             "and is dropped); a step with no kept group makes no update. ‖ΔW‖: Frobenius norm of the "
             "LoRA weight change summed over layers (0 = the base model).")
    if notes:
        text += "\n\n" + "\n".join(f"- {n}" for n in notes)
    return text + ("\n\n" + "\n".join(pics) if pics else "")


def _routing(run_dir: Path, ms: dict) -> str:
    out = _outputs(ms, "compose")
    if not out:
        m = ms.get("compose")
        return f"_No composed model._ {m.note or m.error or '' if m else ''}"
    if out.get("routing") == "classifier":
        return _classifier_routing(out)
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


def _classifier_routing(out: dict) -> str:
    spec = out.get("classifier") or {}
    choices = out.get("classifier_choices") or {}
    rows = [[env, ", ".join(f"{k}: {v}" for k, v in sorted(c.items()))] for env, c in sorted(choices.items())]
    text = (f"Classifier routing (the paper's): per task the base model scores the adapters' "
            f"descriptions plus \"none\" ({spec.get('scoring', '?')} scoring, top-p "
            f"{spec.get('top_p', '?')}) and the chosen adapters are merged once for the task; no gate "
            f"training. Its choice on the {out.get('demos', '?')} oracle demonstrations (training "
            f"seeds), by env — right adapter alone on {out.get('classifier_right', '?')}:\n\n")
    return text + _table(["env", "chosen (tasks)"], rows)


def success_ci(path: str | Path, resamples: int = 2000) -> tuple[float, float, float, int]:
    """Success rate of one eval run over its tasks (trials averaged) with a bootstrap 95 % CI."""
    _, episodes = load_run(path)
    acc: dict[tuple[str, str], list[float]] = {}
    for e in episodes:
        acc.setdefault((e.env, e.task_id), []).append(float(e.success))
    per_task = [sum(v) / len(v) for _, v in sorted(acc.items())]
    iv = paired_bootstrap([0.0] * len(per_task), per_task, resamples, 0)
    return iv.diff, iv.lo, iv.hi, len(per_task)


def _ci_cell(path: str | None) -> str:
    if not path:
        return "–"
    try:
        p, lo, hi, _ = success_ci(path)
    except (ResultsError, ValueError):
        return "–"
    return f"{p:.2f} [{lo:.2f}, {hi:.2f}]"


def _env_name(name: str) -> str:
    """``tracec/x-v0`` (a trajectory's env) or ``…/x.py`` (an env file) -> ``x``."""
    if name.startswith("tracec/") and name.endswith("-v0"):
        return name.removeprefix("tracec/").removesuffix("-v0")
    return Path(name).stem if name.endswith(".py") else name


def _overlap_cell(r: dict) -> str:
    o = r.get("instance_overlap")
    if not o or "repeated" not in o:
        return "not recorded"
    return f"{o['repeated']} of {o['evaluated']} (~{o.get('estimated_in_range', 0):g} in range)"


def _heldout(ms: dict, cfg: dict | None = None) -> str:
    runs = _outputs(ms, "heldout_eval").get("env_results") or {}
    if not runs:
        tasks = ((cfg or {}).get("final_eval") or {}).get("env_tasks") or 0
        m = ms.get("heldout_eval")
        if tasks and m is None:
            return (f"_Held-out env eval not run yet: the config asks for {tasks} held-out seeds "
                    "per trained env (stage `heldout_eval`; the run stopped before it)._")
        if tasks:
            why = f": {m.error}" if getattr(m, "error", None) else ""
            return f"_Held-out env eval {m.status}{why}._"
        return ("_No held-out env eval (set `final_eval.env_tasks` to evaluate every model on "
                "held-out seeds of the trained envs)._")
    first = next(iter(runs.values())).get("first_seed", "?")
    rows = [[label, ", ".join(_env_name(e) for e in r.get("envs") or []), r.get("episodes"),
             _ci_cell(r.get("trajectories")), r.get("avg_reward", 0.0), _overlap_cell(r)]
            for label, r in runs.items()]
    text = (f"Every model on the same held-out seeds (from {first}; seeds are tasks, disjoint from "
            "every adapter's training seeds, which its `tracec.json` records), greedy decoding. "
            "Success with a bootstrap 95 % CI over tasks:\n\n")
    text += _table(["model", "envs", "episodes", "success [95 % CI]", "mean reward",
                    "repeat a training instance"], rows)
    text += ("\n\n_Repeat a training instance_: evaluated instances equal to one drawn on a sample "
             "of the model's training seeds, and about how many over its whole training range "
             "(`instance_overlap` in each eval's `summary.json`).")
    text += "".join(f"\n\n{line}" for r in runs.values()
                    for line in overlap_lines(r.get("instance_overlap"))[1:])
    paired = _paired_table({k: v.get("trajectories") for k, v in runs.items()}, common=True,
                           per_env=True)
    if paired:
        text += "\n\n" + paired
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
            "episodes": r.get("episodes", 0), "trajectories": r.get("trajectories")}


def _pass_rates(run_dir: Path, ms: dict) -> str:
    rows = pass_rate_rows(ms)
    if not rows:
        return "_No evaluation yet._"
    text = _table(["model", "split", "episodes", "pass rate", "95 % CI (bootstrap over tasks)",
                   "avg reward", "training rollouts"],
                  [[r["model"], r["split"], r["episodes"], r["pass_rate"], _ci_cell(r.get("trajectories")),
                    r["avg_reward"], r["rollouts"]] for r in rows])
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
    runs = {label: r["trajectories"] for label, r in (_outputs(ms, "final_eval").get("results") or {}).items()
            if r.get("trajectories")}
    g = _outputs(ms, "grpo_target")
    if (g.get("eval") or {}).get("trajectories"):
        runs["GRPO on target"] = g["eval"]["trajectories"]
    return _paired_table(runs)


def _noise(lo: float, hi: float) -> str:
    if lo <= 0 <= hi:
        return "yes: within noise (CI contains 0)"
    return "no: B better" if lo > 0 else "no: B worse"


def _paired_table(runs: dict[str, str | None], common: bool = False, per_env: bool = False) -> str:
    """B − A for every pair of runs (paired bootstrap over tasks). ``common``: only the tasks both
    runs hold (an adapter evaluated on its own env against a model evaluated on all envs);
    ``per_env``: a row per env as well as the overall one when the pair shares several envs."""
    runs = {k: v for k, v in runs.items() if v}
    rows, skipped, verdicts = [], [], []
    for (la, pa), (lb, pb) in combinations(runs.items(), 2):
        try:
            res = compare_runs(pa, pb, resamples=REPORT_RESAMPLES, common=common)
        except (UnpairedRuns, ResultsError) as exc:
            skipped.append(f"{la} vs {lb}: {str(exc).split('.')[0]}")
            continue
        groups = res["groups"] if per_env and len(res["groups"]) > 1 else []
        for o in [*groups, res["overall"]]:
            lo, hi = o["pass_ci"]
            one = len(res["groups"]) == 1
            where = _env_name(res["groups"][0]["group"] if one else o["group"])
            rows.append([f"{lb} − {la}", where, o["tasks"], f"{o['pass_rate_a']:.2f} → {o['pass_rate_b']:.2f}",
                         f"{o['pass_diff'] * 100:+.1f}", f"[{lo * 100:+.1f}, {hi * 100:+.1f}]",
                         f"{o['reward_diff']:+.3f}", _noise(lo, hi)])
        o = res["overall"]
        lo, hi = o["pass_ci"]
        verdicts.append(f"- {lb} vs {la} ({o['tasks']} tasks): {o['pass_diff'] * 100:+.1f} points "
                        f"[{lo * 100:+.1f}, {hi * 100:+.1f}] — "
                        + ("within noise: no difference shown." if lo <= 0 <= hi else
                           f"{lb} {'better' if lo > 0 else 'worse'}, the CI excludes 0."))
    if not rows and not skipped:
        return ""
    text = ("Paired differences (same tasks; paired bootstrap over tasks, "
            f"{REPORT_RESAMPLES} resamples, 95 % CI; `tracec compare A B` for per-task flips):\n\n")
    text += _table(["B − A", "tasks of", "tasks", "success A → B", "Δ success (points)", "95 % CI",
                    "Δ reward", "within noise"], rows) if rows else ""
    if verdicts:
        text += "\n\nIn words:\n\n" + "\n".join(verdicts)
    if skipped:
        text += "\n\nNot compared (unpaired runs): " + "; ".join(skipped)
    return text


def _rollouts(ms: dict) -> str:
    base = _outputs(ms, "baseline").get("episodes", 0)
    train = _outputs(ms, "train").get("rollouts", 0)
    demos = _outputs(ms, "compose").get("demos", 0)
    final = sum(r.get("episodes", 0) for r in (_outputs(ms, "final_eval").get("results") or {}).values())
    env_final = sum(r.get("episodes", 0) for r in (_outputs(ms, "heldout_eval").get("env_results") or {}).values())
    g = _outputs(ms, "grpo_target")
    grpo = g.get("rollouts", 0) + (g.get("eval") or {}).get("episodes", 0)
    rows = [["baseline eval (target, train split)", base], ["adapter training (capability envs)", train],
            ["oracle demonstrations (compose)", demos], ["final eval (held-out env seeds)", env_final],
            ["final eval (target, test split)", final],
            ["GRPO on target (train + eval)", grpo],
            ["total", base + train + demos + env_final + final + grpo]]
    return _table(["where", "episodes"], rows)


def _failures(run_dir: Path, ms: dict) -> str:
    lines = []
    for s in STAGE_NAMES:
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


# what a hand-edited or foreign run file raises in a section (a value of another type or shape)
SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)


class ReportInputError(InputError):
    """A run folder's file that the report cannot read: the user's edit, not a tracec bug."""


def _culprit(run_dir: Path, ms: dict, section: Any) -> tuple[str, str]:
    """The manifest a failing section reads (the first whose absence lets it render) and its
    stage."""
    for stage, m in ms.items():
        if m is not None:
            try:
                section({**ms, stage: None})
            except SHAPE_ERRORS:
                continue
            return str(manifest_path(run_dir, stage)), stage
    return f"a file in {run_dir}", "STAGE"


def _render_sections(run_dir: Path, ms: dict, cfg: dict) -> tuple[dict[str, str], list[str]]:
    """Each section's Markdown; a section that cannot read its inputs says so in the report,
    and its problem (naming the file) is returned."""
    sections = {
        "Stages": lambda m: _stages(m),
        "Selected capabilities": lambda m: _capabilities(run_dir, m),
        "Specs": lambda m: _specs(m),
        "Environment checks": lambda m: _checks(run_dir),
        "Training": lambda m: _training(run_dir, m),
        "Routing": lambda m: _routing(run_dir, m),
        "Held-out env seeds": lambda m: _heldout(m, cfg),
        "Pass rates": lambda m: _pass_rates(run_dir, m),
        "Rollouts spent": lambda m: _rollouts(m),
        "What failed and why": lambda m: _failures(run_dir, m),
    }
    bodies, problems = {}, []
    for title in SECTIONS:
        try:
            bodies[title] = sections[title](ms)
        except SHAPE_ERRORS as exc:
            where, stage = _culprit(run_dir, ms, sections[title])
            why = " ".join(f"{type(exc).__name__}: {exc}".split())[:160]
            problems.append(f"{where}: the report's \"{title}\" section cannot read it ({why}); "
                            "it was edited or written by another tracec version: restore it, or "
                            f"rerun that stage with `tracec run CONFIG -o {run_dir} --from {stage}`")
            bodies[title] = f"_Not shown: {where} could not be read ({why})._"
    return bodies, problems


def _report(run_dir: Path) -> tuple[str, list[str]]:
    ms = {s: read_manifest(run_dir, s) for s in STAGE_NAMES}
    cfg = _load_json(run_dir / CONFIG_COPY)
    cfg = cfg if isinstance(cfg, dict) else {}
    model = _mapping(cfg.get("model")).get("base", "?")
    target = _mapping(cfg.get("target"))
    parts = [f"# tracec run report: {cfg.get('name', run_dir.name)}",
             (f"Base model `{model}`, target τ² {target.get('domain', '?')} "
              f"({target.get('train_split', '?')} split for analysis, "
              f"{target.get('test_split', '?')} for the final eval), user "
              f"`{target.get('user', '?')}`. Config: `{CONFIG_COPY}`.")]
    bodies, problems = _render_sections(run_dir, ms, cfg)
    for title in SECTIONS:
        parts.append(f"## {title}\n\n{bodies[title]}")
    return "\n\n".join(parts) + "\n", problems


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def render_report(run_dir: str | Path) -> str:
    """The report's Markdown text (writes the PNG plots it links to); a section whose files
    cannot be read says so in its place."""
    return _report(Path(run_dir))[0]


def write_report(run_dir: str | Path) -> Path:
    """Write ``RUN_DIR/report.md`` (and its plots); returns its path. A run file the report
    cannot read is a :class:`ReportInputError` naming it, raised after the rest is written."""
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        raise FileNotFoundError(f"{run_dir} is not a `tracec run` folder (no {CONFIG_COPY})")
    path = run_dir / REPORT
    text, problems = _report(run_dir)
    write_atomic(path, text)
    if problems:
        raise ReportInputError(problems[0] + (f" (and {len(problems) - 1} more section(s); "
                                              f"see {path})" if len(problems) > 1 else ""))
    return path
