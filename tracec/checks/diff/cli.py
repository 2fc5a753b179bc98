"""``tracec diff``: what a spec change does, as markdown for a PR comment (or ``--json``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracec.checks.cli import _prompt_counter  # --tokenizer as `tracec check` reads it
from tracec.checks.diff.compare import DEFAULT_SEEDS, MAX_SEEDS, diff_versions
from tracec.checks.diff.markdown import render_markdown
from tracec.checks.diff.source import DiffError, from_file, from_revision
from tracec.checks.prompt_size import CHARS_PER_TOKEN
from tracec.outputs import OutputError, refuse_input, write_atomic


@click.command("diff")
@click.argument("specs", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--rev",
    default=None,
    metavar="REV",
    help="Compare SPEC with its version at this git revision (HEAD~1, main, a hash).",
)
@click.option(
    "--seeds",
    default=DEFAULT_SEEDS,
    show_default=True,
    type=click.IntRange(1, MAX_SEEDS),
    help="Seeds compared (0..N-1, as `tracec check` uses).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the markdown (or JSON) to this file instead of printing it.",
)
@click.option(
    "--tokenizer",
    default=None,
    metavar="NAME",
    help="Count prompt tokens with this tokenizer (smollm2, a path or an HF id) "
    f"[default: an estimate of characters / {CHARS_PER_TOKEN:g}].",
)
def diff_cmd(
    specs: tuple[Path, ...],
    rev: str | None,
    seeds: int,
    as_json: bool,
    out: Path | None,
    tokenizer: str | None,
) -> None:
    """Show what changing a spec does: tasks, weights, reward ladder, gold calls, forbids,
    first-prompt size, and how worlds, task instances, gold actions and oracle/probe rewards
    change on a fixed set of seeds. Markdown, fit for a PR comment.

    \b
    tracec diff OLD.tracec NEW.tracec
    tracec diff specs/x.tracec --rev HEAD~1     # the committed version -> the working file
    """
    if rev is not None and len(specs) != 1:
        raise click.UsageError("--rev takes one SPEC: tracec diff specs/x.tracec --rev HEAD~1")
    if rev is None and len(specs) != 2:
        raise click.UsageError("give two specs (tracec diff OLD NEW) or one with --rev REV")
    if out is not None:  # before any work: the report never replaces one of its inputs
        try:
            refuse_input(out, specs, "report")
        except OutputError as exc:
            raise click.ClickException(str(exc)) from None
        if out.suffix == ".tracec":
            raise click.ClickException(f"{out}: the report is markdown or JSON, not a spec; "
                                       "write it to a .md or .json file")
    counter, method = _prompt_counter(tokenizer, None)
    try:
        old = from_revision(specs[0], rev, "old") if rev is not None else from_file(specs[0], "old")
        new = from_file(specs[-1], "new")
    except DiffError as exc:
        raise click.ClickException(str(exc)) from None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("diff {task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} seeds"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not sys.stderr.isatty(),
    ) as bar:
        task = bar.add_task(new.ir.name, total=seeds)
        report = diff_versions(
            old,
            new,
            seeds=seeds,
            count=counter,
            method=method,
            progress=lambda n: bar.advance(task, n),
        )
    text = (
        json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
        if as_json
        else render_markdown(report)
    )
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        write_atomic(out, text)
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{out}: cannot write: {exc.strerror or exc}") from None
    click.echo(f"wrote {out}", err=True)
