"""``tracec check``: offline checks of compiled capability environments."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tracec.checks.report import CheckReport
from tracec.checks.run import run_checks
from tracec.runtime.loader import LoadError, load_paths

DEFAULT_PATH = "generated_envs"


def _table(reports: list[CheckReport]) -> Table:
    table = Table(title="tracec check", box=box.SIMPLE_HEAD, pad_edge=False)
    headers = ("env", "tasks", "env_chk", "determ", "probes", "var", "std", "levels", "time", "result")
    for col in headers:
        right = col in {"tasks", "var", "std", "levels", "time"}
        table.add_column(col, justify="right" if right else "left", no_wrap=True,
                         min_width=12 if col == "env" else None)

    def mark(x: bool | None) -> str:
        return "-" if x is None else ("[green]ok[/]" if x else "[red]FAIL[/]")

    for r in reports:
        table.add_row(
            r.env, str(len(r.tasks)), mark(r.check_env), mark(r.determinism), mark(r.probes),
            f"{r.variance_share:.0%}", f"{r.reward_std:.3f}", f"{r.levels_reached}/{r.levels_total}",
            f"{r.seconds:.1f}s", "[green]pass[/]" if r.passed else "[red]FAIL[/]",
        )
    return table


@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--seeds", default=64, show_default=True, type=click.IntRange(1), help="Seeds per task.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--no-env-checker", is_flag=True, help="Skip gymnasium's check_env.")
def check_cmd(paths: tuple[Path, ...], seeds: int, as_json: bool, no_env_checker: bool) -> None:
    """Check compiled environments: check_env, determinism, probes, reward variance.

    PATHS are generated modules, folders of them (default: generated_envs/), or .tracec
    specs/folders (compiled on the fly).
    """
    targets = list(paths) or [Path(DEFAULT_PATH)]
    if not paths and not targets[0].is_dir():
        raise click.ClickException(
            f"no {DEFAULT_PATH}/ folder here; run `tracec compile specs/` or pass PATHS")
    try:
        loaded = load_paths(targets)
    except LoadError as exc:
        raise click.ClickException(str(exc)) from None
    if not loaded:
        raise click.ClickException("no environment modules or specs found in " + ", ".join(map(str, targets)))

    console = Console(stderr=as_json, width=None if sys.stdout.isatty() else 120)
    reports: list[CheckReport] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True, disable=as_json) as bar:
        for label, module in loaded:
            if isinstance(module, Exception):
                reports.append(CheckReport(env=Path(label).stem, module=label, problems=[str(module)]))
                continue
            task = bar.add_task(Path(label).stem, total=seeds)
            try:
                report = run_checks(module, seeds=seeds, check_env=not no_env_checker,
                                    progress=lambda n, t=task: bar.advance(t, n))
            except LoadError as exc:
                report = CheckReport(env=Path(label).stem, module=label, problems=[str(exc)])
            reports.append(report)

    if as_json:
        click.echo(json.dumps([r.to_dict() for r in reports], indent=2))
    else:
        console.print(_table(reports))
        for r in reports:
            for p in r.problems:
                console.print(f"[red]{escape(r.env)}:[/] {escape(p)}", highlight=False)
    if any(not r.passed for r in reports):
        if not as_json:
            failed = sum(1 for r in reports if not r.passed)
            click.echo(f"{failed} of {len(reports)} environments failed", err=True)
        click.get_current_context().exit(1)
