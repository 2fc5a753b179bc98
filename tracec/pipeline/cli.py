"""``tracec run CONFIG -o RUN_DIR``: the whole TRACE loop, resumable, with a report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from tracec.pipeline.registry import STAGE_NAMES
from tracec.pipeline.report import is_run_dir, write_report


@click.command("run")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out", "run_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Run folder: one sub-folder and manifest per stage, report.md.")
@click.option("--from", "from_stage", type=click.Choice(STAGE_NAMES),
              help="Re-run from this stage on, even if its inputs did not change.")
@click.option("--until", type=click.Choice(STAGE_NAMES), help="Stop after this stage.")
@click.option("--json", "as_json", is_flag=True, help="Print the stage manifests as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def run_cmd(config: Path, run_dir: Path, from_stage: str | None, until: str | None,
            as_json: bool, quiet: bool) -> None:
    """Run the TRACE loop from a run CONFIG (tracec.toml) into RUN_DIR.

    \b
    Stages (names for --from/--until):
      baseline -> analyze -> specs -> compile -> train -> compose
      -> heldout_eval (held-out env seeds) -> final_eval (τ² test split)
      -> grpo_target (GRPO-on-target baseline, optional)
    A rerun skips stages whose inputs did not change and resumes an unfinished one.
    The whole config is checked (types, ranges, paths, model, device) before any stage.

    \b
    Example (about 35 min on a 2-core CPU: 34.5 min measured, benchmarks/README.md):
      tracec model prepare && tracec run configs/cpu-demo.toml -o runs/cpu-demo
    """
    from tracec.pipeline.config import ConfigError, load_config
    from tracec.pipeline.preflight import preflight
    from tracec.pipeline.report import write_report
    from tracec.pipeline.runner import RunError, run_pipeline

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        cfg = load_config(config)
        preflight(cfg, config, until)  # every path, the model and the agents, before any stage
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    from tracec.outputs import OutputError
    from tracec.pipeline.runner import claim_run_dir

    try:  # a folder that is not tracec's, or an input inside a stage folder: nothing written
        claim_run_dir(cfg, run_dir, (config,))
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    log = (lambda msg: click.echo(msg, err=True)) if not as_json else (lambda msg: None)
    error = None
    try:
        manifests = run_pipeline(cfg, run_dir, from_stage, until, quiet=quiet or as_json, log=log)
    except RunError as exc:
        error, manifests = str(exc), None
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    report = write_report(run_dir)
    if as_json:
        from tracec.pipeline.manifest import read_manifest

        ms = [read_manifest(run_dir, s) for s in STAGE_NAMES]
        click.echo(json.dumps({"run_dir": str(run_dir), "report": str(report), "error": error,
                               "stages": [m.model_dump() for m in ms if m]}, indent=1))
    else:
        click.echo(f"report: {report}", err=True)
    if error:
        raise click.ClickException(f"{error} (details: {run_dir}; rerun the same command to resume)")
    del manifests


@click.command("report")
@click.argument("run_dir", metavar="RUN_DIR|STUDY.json", type=click.Path())
@click.option("-o", "--out", type=click.Path(dir_okay=False), default=None,
              help="PNG path (default RUN_DIR/training_curves.png; for a study STUDY.png, "
                   "with the markdown table beside it as .md).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def report_cmd(run_dir: str, out: str | None, as_json: bool) -> None:
    """Regenerate the report of a `tracec run` folder, draw the reward and kept-group
    curves of a `tracec train` run, or plot a study file.

    \b
    Examples:
      tracec report runs/demo                      # a tracec run folder: report.md
      tracec report adapters/x                     # a tracec train folder: training_curves.png
      tracec report benchmarks/trace_cpu/results.json -o study.png

    A study file (JSON) lists arms, each with a name, a method, its training budget
    (`demos`, `rollouts` or `episodes`, optional `cpu_seconds`) and either a `tracec eval`
    folder (`eval`) or recorded `success` and `ci`; optional `pairs` ({a, b}) give paired
    differences B − A. The PNG shows success against episodes and against CPU seconds, one
    curve per method with 95 % CI bars; the markdown table goes beside it.
    See docs/evaluation.md, "Studies"."""
    path = Path(run_dir)
    if path.is_file() or path.suffix == ".json":
        from tracec.files import InputError
        from tracec.pipeline.study import write_study

        try:
            summary = write_study(path, out)
        except InputError as exc:
            raise click.ClickException(str(exc)) from None
        if as_json:
            click.echo(json.dumps(summary, indent=1))
        else:
            click.echo(f"wrote {summary['png']} and {summary['markdown']} "
                       f"({len(summary['arms'])} arms, {len(summary['pairs'])} pairs)")
        return
    if is_run_dir(Path(run_dir)):
        path = write_report(Path(run_dir))
        click.echo(json.dumps({"report": str(path)}) if as_json else f"wrote {path}")
        return
    from tracec.train.plots import NoMetrics, report_training

    try:
        summary = report_training(run_dir, out)
    except NoMetrics as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(summary))
    else:
        parts = []
        if summary.get("sft_steps"):
            parts.append(f"{summary['sft_steps']} SFT steps, loss {summary['sft_loss_first']:.3f} → "
                         f"{summary['sft_loss_last']:.3f}")
        if summary["steps"]:
            parts.append(f"{summary['steps']} steps, reward {summary['reward_first']:.3f} → "
                         f"{summary['reward_last']:.3f}, kept share {summary['kept_share_mean']:.0%}")
        click.echo(f"{summary['png']}: " + "; ".join(parts))
