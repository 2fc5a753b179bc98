"""``tracec eval`` (run an agent on τ² targets or compiled envs) and ``tracec grade``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tracec.llm.cli_options import device_option, dtype_option

if TYPE_CHECKING:
    from tracec.targets.evaluate import EvalConfig


def _client(spec: str | None, what: str):
    """``MODEL@URL`` → ChatClient (None when not given)."""
    if not spec:
        return None
    model, at, url = spec.rpartition("@")
    if not at or not model or not url.startswith(("http://", "https://")):
        raise click.ClickException(f"bad {what} {spec!r}: expected MODEL@http://host:port/v1")
    from tracec.llm.client import ChatClient

    return ChatClient(url, model)


def _split_ids(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _print_table(rows: list, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    max_k = max((max(r.pass_hat_k, default=0) for r in rows), default=0)
    table = Table(title=title)
    for col in ("env", "tasks", "episodes", "avg reward", "pass rate"):
        table.add_column(col, justify="left" if col == "env" else "right")
    for k in range(1, max_k + 1):
        table.add_column(f"pass^{k}", justify="right")
    for r in rows:
        cells = [r.group, str(r.tasks), str(r.episodes), f"{r.avg_reward:.3f}", f"{r.pass_rate:.3f}"]
        cells += [f"{r.pass_hat_k[k]:.3f}" if k in r.pass_hat_k else "-" for k in range(1, max_k + 1)]
        table.add_row(*cells)
    Console().print(table)


@click.command("eval")
@click.option("--agent", "agent_spec", required=True,
              help="openai:MODEL@URL | local:PATH_OR_ID[+adapter:DIR] | composed:DIR | oracle | scripted[:FILE]")
@click.option("--target", "targets", multiple=True, help="τ² target: tau2:airline or tau2:retail (repeatable)")
@click.option("--env", "envs", multiple=True,
              help="compiled env: tracec/<name>-v0, generated_envs/<name>.py or a module (repeatable)")
@click.option("--envs-dir", default="generated_envs", show_default=True,
              help="compiled env folder where --env names and gym ids are looked up first "
                   "(its envs are used even where another folder registered the same id)")
@click.option("--split", default="test", show_default=True, type=click.Choice(["base", "train", "test"]),
              help="τ² task split")
@click.option("--task-ids", default=None, help="comma-separated τ² task ids (overrides --split)")
@click.option("--tasks", "num_tasks", type=click.IntRange(1, 1_000_000), default=None,
              help="number of tasks (τ²: first N of the split; compiled envs: N seeds, default 10)")
@click.option("--trials", type=click.IntRange(1, 1000), default=1, show_default=True, help="trials per task (k of pass^k)")
@click.option("--user", "user_spec", default="scripted", show_default=True,
              help="simulated user for τ² targets: scripted | llm:MODEL@URL")
@click.option("--judge", default=None, help="MODEL@URL: judge τ²'s NL assertions with this model")
@click.option("--tau2-data", type=click.Path(file_okay=False), default=None, envvar="TRACEC_TAU2_DATA",
              help="tau2-bench data/tau2/domains directory, or `sample`: the few tasks shipped with tracec [env: TRACEC_TAU2_DATA]")
@click.option("--max-turns", type=click.IntRange(1, 10_000), default=30, show_default=True, help="agent turns per τ² episode")
@click.option("--max-errors", type=click.IntRange(1, 10_000), default=10, show_default=True, help="tool errors before τ² stops an episode")
@click.option("--batch-size", type=click.IntRange(1, 4096), default=4, show_default=True, help="episodes in flight at once")
@click.option("--seed", type=int, default=0, show_default=True, help="τ² base seed (trial t uses seed+t)")
@click.option("--env-seeds", default="heldout", show_default=True,
              help="compiled envs: first reset seed (task i uses it + i); `heldout` = 10^9, the start "
                   "of the held-out range that training never draws from")
@click.option("--max-new-tokens", type=click.IntRange(1, 1 << 17), default=512, show_default=True,
              help="local/composed agents: tokens per assistant turn")
@device_option(help="local/composed agents: where the model runs (cpu, cpu:N, cuda, cuda:N, mps)")
@dtype_option(help="local/composed agents: weights' dtype (auto: bf16 where the device computes it, "
                   "fp32 on CPU; bf16, fp16, fp32)")
@click.option("--allow-train-seeds", is_flag=True,
              help="evaluate an adapter (or a composed model's adapters) even on seeds its tracec.json says it was trained on")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs/eval", show_default=True,
              help="output directory (trajectories.jsonl, τ² results, summary.json); reruns resume")
@click.option("--fresh", is_flag=True,
              help="discard the earlier outputs tracec wrote in --out (nothing else) instead of "
                   "resuming; only once the command is validated")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
def eval_cmd(agent_spec: str, targets: tuple[str, ...], envs: tuple[str, ...], split: str,
             task_ids: str | None, num_tasks: int | None, trials: int, user_spec: str,
             judge: str | None, tau2_data: str | None, max_turns: int, max_errors: int,
             batch_size: int, seed: int, env_seeds: str, max_new_tokens: int, device: str,
             dtype: str, allow_train_seeds: bool, out_dir: str, fresh: bool, as_json: bool,
             envs_dir: str) -> None:
    """Run an agent on τ² targets and/or compiled envs; report pass rate and pass^k.

    Only one eval at a time may write to an --out folder (a lock file, --out/.lock)."""
    from tracec.targets.evaluate import ENV_TASKS, LOCK, EvalConfig

    if not targets and not envs:
        raise click.ClickException("nothing to evaluate: pass --target tau2:DOMAIN and/or --env ENV")
    if trials < 1 or (num_tasks is not None and num_tasks < 1):
        raise click.ClickException("--trials and --tasks must be at least 1")
    from tracec.core.seeds import HELDOUT_START, SeedRangeError, eval_range, parse_range

    try:
        first_seed = HELDOUT_START if env_seeds == "heldout" else parse_range(env_seeds, "--env-seeds").start
        if envs:
            eval_range(first_seed, num_tasks or ENV_TASKS)
    except SeedRangeError as exc:
        raise click.ClickException(str(exc)) from None
    from tracec.outputs import OutputError, claim_dir

    try:
        owned = claim_dir(out_dir, "eval", _is_eval_output)
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    cfg = EvalConfig(
        agent=agent_spec, targets=list(targets), envs=list(envs), split=split,
        task_ids=_split_ids(task_ids), num_tasks=num_tasks, trials=trials, user=user_spec,
        tau2_data=tau2_data, max_turns=max_turns, max_errors=max_errors,
        batch_size=batch_size, seed=seed, env_seeds=first_seed, allow_train_seeds=allow_train_seeds,
        max_new_tokens=max_new_tokens, envs_dir=envs_dir, device=device, dtype=dtype,
        out_dir=str(owned.path),
    )

    def prepare(names: list[str]) -> None:  # all validated, the agent built: now clear
        if fresh:
            owned.remove_own(keep=(LOCK,))
        owned.record(*names)

    # run_eval holds OUT/.lock from before prepare() until the summary is written
    _eval(cfg, judge, as_json, prepare)


def _is_eval_output(entry: Path) -> bool:
    """Whether an entry of an unmarked folder is one ``tracec eval`` writes."""
    from tracec.targets.evaluate import LOCK, TRAJECTORIES

    name = entry.name
    return entry.is_file() and (name in (LOCK, TRAJECTORIES, "summary.json", "summary.json.tmp")
                                or (name.startswith("tau2_") and ".json" in name))


def _eval(cfg: EvalConfig, judge: str | None, as_json: bool,
          prepare: Callable[[list[str]], None] | None = None) -> None:
    """Run the eval ``cfg`` and print its summary (a table, or JSON with ``as_json``)."""
    from tracec.harness.results import ResultsError
    from tracec.targets.data import DataError
    from tracec.targets.evaluate import run_eval
    from tracec.targets.overlap import overlap_lines

    try:
        summary = run_eval(cfg, judge=_client(judge, "--judge"), progress=not as_json,
                           prepare=prepare)
    except (DataError, ResultsError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    except RuntimeError as exc:  # LLMError, ModelNotPrepared
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        from tracec.targets.metrics import GroupMetrics

        _print_table([GroupMetrics.model_validate(r) for r in summary["metrics"]],
                     f"{cfg.agent}: {summary['episodes']} episodes")
        for line in overlap_lines(summary.get("instance_overlap")):
            click.echo(line)
        click.echo(f"trajectories: {summary['trajectories']}")
        for path in summary["tau2_results"]:
            click.echo(f"τ² results:   {path}")


@click.command("grade")
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("--tau2-data", type=click.Path(file_okay=False), default=None, envvar="TRACEC_TAU2_DATA",
              help="tau2-bench data/tau2/domains directory, or `sample`: the few tasks shipped with tracec [env: TRACEC_TAU2_DATA]")
@click.option("--domain", default=None, type=click.Choice(["airline", "retail"]),
              help="domain (default: from the results file)")
@click.option("--judge", default=None, help="MODEL@URL: judge NL assertions with this model")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="write the results back with tracec's reward_info")
@click.option("--json", "as_json", is_flag=True, help="print per-simulation grades as JSON")
def grade_cmd(results: str, tau2_data: str | None, domain: str | None, judge: str | None,
              out_path: str | None, as_json: bool) -> None:
    """Re-grade saved τ²-bench results (Results JSON) with tracec's τ²-compatible grader."""
    from tracec.harness.results import ResultsError
    from tracec.targets.data import DataError
    from tracec.targets.regrade import regrade

    try:
        report = regrade(results, tau2_data, domain, _client(judge, "--judge"), out_path)
    except (DataError, ResultsError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    _print_grades(report)


def _print_grades(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{report['file']} ({report['domain']})")
    for col in ("simulation", "task", "trial", "ended", "recorded", "tracec", "DB", "COMM", "notes"):
        table.add_column(col)
    for g in report["grades"]:
        bd = g["reward_breakdown"]
        rec = g["recorded_reward"]
        table.add_row(
            g["simulation_id"][:12], g["task_id"], str(g["trial"]), g["termination_reason"],
            "-" if rec is None else f"{rec:.2f}", f"{g['reward']:.2f}",
            str(bd.get("DB", "-")), str(bd.get("COMMUNICATE", "-")), g["note"][:60],
        )
    Console().print(table)
    click.echo(
        f"mean reward {report['mean_reward']:.3f} over {report['n']} simulations; "
        f"agrees with the recorded reward on {report['agree']}/{report['comparable']}"
        + (f" (NL assertions not judged: {report['nl_unjudged']} simulations)" if report["nl_unjudged"] else "")
    )


@click.command("compare")
@click.argument("run_a", type=click.Path(exists=True))
@click.argument("run_b", type=click.Path(exists=True))
@click.option("--resamples", type=click.IntRange(1, 10_000_000), default=10_000, show_default=True, help="bootstrap resamples")
@click.option("--seed", type=int, default=0, show_default=True, help="bootstrap RNG seed")
@click.option("--common", is_flag=True,
              help="compare only the episodes both runs hold (e.g. an unfinished run); says how many were left out")
@click.option("--allow-env-change", is_flag=True,
              help="compare even runs whose episodes record different env versions (spec or "
                   "compiled module changed); the report lists the changes")
@click.option("--json", "as_json", is_flag=True, help="print the comparison as JSON")
def compare_cmd(run_a: str, run_b: str, resamples: int, seed: int, common: bool,
                allow_env_change: bool, as_json: bool) -> None:
    """Compare two `tracec eval` runs on the same tasks: B − A in pass rate and mean reward with
    paired-bootstrap 95 % intervals (tasks resampled, trials averaged), per env and overall, and
    the tasks whose success flipped. RUN_A/RUN_B: eval --out folders or trajectory JSONL files."""
    from tracec.harness.results import ResultsError
    from tracec.targets.compare import UnpairedRuns, compare_runs

    if resamples < 1:
        raise click.ClickException("--resamples must be at least 1")
    try:
        report = compare_runs(run_a, run_b, resamples, seed, common, allow_env_change)
    except (UnpairedRuns, ResultsError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"B − A    A = {report['a']}    B = {report['b']}")
    for col in ("env", "tasks", "pass A → B", "Δ pass, points [95% CI]", "reward A → B",
                "Δ reward [95% CI]", "pass: in noise?"):
        table.add_column(col, justify="left" if col == "env" else "right")
    for g in report["groups"] + [report["overall"]]:
        pl, ph = g["pass_ci"]
        rl, rh = g["reward_ci"]
        table.add_row(g["group"], str(g["tasks"]), f"{g['pass_rate_a']:.3f} → {g['pass_rate_b']:.3f}",
                      f"{g['pass_diff'] * 100:+.1f} [{pl * 100:+.1f}, {ph * 100:+.1f}]",
                      f"{g['reward_a']:.3f} → {g['reward_b']:.3f}",
                      f"{g['reward_diff']:+.3f} [{rl:+.3f}, {rh:+.3f}]",
                      "no" if g["pass_significant"] else "yes")
    Console().print(table)
    click.echo(f"paired bootstrap over tasks, {report['resamples']} resamples, seed {report['seed']}"
               + (f"; {report['dropped_unpaired']} episodes held by only one run left out"
                  if report["dropped_unpaired"] else ""))
    if report["env_changes"]:
        click.echo("warning: the runs ran different env versions: " + "; ".join(report["env_changes"]))
    for label, key in (("B passes, A fails", "gained"), ("A passes, B fails", "lost")):
        tasks = report[key]
        shown = ", ".join(tasks[:20]) + (f" … (+{len(tasks) - 20})" if len(tasks) > 20 else "")
        click.echo(f"{label}: {len(tasks)}" + (f": {shown}" if tasks else ""))
