"""``tracec diff``: what a spec change does, as markdown fit for a PR comment."""

from __future__ import annotations

from pathlib import Path

import click

from tracec import files
from tracec.checks.diff import (
    DEFAULT_SEEDS,
    DiffError,
    compile_version,
    diff_markdown,
    read_revision,
)


@click.command("diff")
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path), required=False)
@click.option("--rev", default=None, metavar="REV",
              help="Compare OLD at this git revision (e.g. HEAD, main) with OLD as it is now.")
@click.option("--seeds", default=DEFAULT_SEEDS, show_default=True, type=click.IntRange(1, 1000),
              help="Seeds over which worlds, tasks, gold actions and rewards are compared.")
@click.option("-o", "--out", type=click.Path(path_type=Path), default=None,
              help="Write the markdown here instead of printing it.")
def diff_cmd(old: Path, new: Path | None, rev: str | None, seeds: int, out: Path | None) -> None:
    """Show what a spec change does: tasks and weights, the reward ladder, gold and forbidden
    tools, first-prompt size, and over fixed seeds how many worlds, tasks drawn, gold actions
    and probe rewards differ (one example each).

    \b
    tracec diff specs/old.tracec specs/new.tracec
    tracec diff specs/x.tracec --rev main        # the spec at main -> as it is now
    """
    if (new is None) == (rev is None):
        raise click.UsageError("give two spec files (OLD NEW), or one spec and --rev REV")
    try:
        new_path = new or old
        new_text = files.read_text(new_path, "spec")
        if rev is not None:
            old_text, old_label = read_revision(old, rev), f"{old}@{rev}"
        else:
            old_text, old_label = files.read_text(old, "spec"), str(old)
        a = compile_version(old_text, old_label, old.parent)
        b = compile_version(new_text, str(new_path), new_path.parent)
        text = diff_markdown(a, b, seeds)
    except (DiffError, files.InputError) as exc:
        raise click.ClickException(str(exc)) from None
    if out is not None:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}")
    else:
        click.echo(text, nl=False)
