"""`tracec compile` and `tracec schema`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from tracec.compiler import build
from tracec.compiler.ir import ir_json_schema


@click.command("compile")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path),
              default=Path("generated_envs"), show_default=True,
              help="Package folder for the generated env modules.")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 if the generated files are missing or stale (for CI).")
@click.option("--emit-ir", type=click.Path(path_type=Path), default=None, metavar="DIR",
              help="Also write each capability's IR as DIR/<name>.ir.json.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
@click.option("--werror", is_flag=True,
              help="Treat warnings (unused lets, punctuation-only reply keywords, unreachable "
                   "code...) as errors: exit 1 and write nothing (for CI).")
def compile_cmd(paths: tuple[Path, ...], out_dir: Path, check_only: bool, emit_ir: Path | None,
                as_json: bool, werror: bool) -> None:
    """Compile capability specs (default: specs/) into Gymnasium env modules.

    \b
    Examples:
      tracec compile specs/
      tracec compile specs/ --check          # CI: fail when generated_envs/ is stale
      tracec compile specs/x.tracec --emit-ir build/ir
      tracec compile specs/ --check --werror # CI: also fail on warnings
    """
    console = Console(stderr=True)
    targets = list(paths) or [Path("specs")]
    for p in targets:
        if not p.exists():
            raise click.ClickException(f"{p}: no such file or folder")
    t0 = time.perf_counter()
    bp = build.plan(targets, out_dir)
    elapsed = time.perf_counter() - t0
    if not bp.results:
        raise click.ClickException(f"no .tracec specs in {', '.join(map(str, targets))}")
    failed = [r for r in bp.results if not r.ok]
    for r in bp.results:  # warnings of good specs, errors of bad ones
        if r.diagnostics:
            click.echo(r.rendered, err=True)
            click.echo("", err=True)
    summary = {
        "ok": not failed,
        "seconds": round(elapsed, 4),
        "specs": [
            {
                "path": r.path,
                "capability": r.ir.name if r.ir else None,
                "domain": r.ir.domain if r.ir else None,
                "tasks": len(r.ir.tasks) if r.ir else 0,
                "levels": r.ir.levels if r.ir else [],
                "errors": sum(d.severity == "error" for d in r.diagnostics),
                "warnings": sum(d.severity == "warning" for d in r.diagnostics),
            }
            for r in bp.results
        ],
    }
    if failed:
        if as_json:
            click.echo(json.dumps(summary, indent=2))
        click.echo(f"error: {len(failed)} of {len(bp.results)} spec(s) failed to compile; "
                   f"nothing was written", err=True)
        sys.exit(1)
    warned = [r for r in bp.results if any(d.severity == "warning" for d in r.diagnostics)]
    if werror and warned:
        summary["ok"] = False
        if as_json:
            click.echo(json.dumps(summary, indent=2))
        click.echo(f"error: {len(warned)} of {len(bp.results)} spec(s) have warnings (--werror); "
                   f"nothing was written", err=True)
        sys.exit(1)
    if emit_ir is not None:
        written = build.write_ir(bp, emit_ir)
        summary["ir"] = [str(p) for p in written]
    if check_only:
        diffs = build.differences(bp, out_dir)
        summary["stale"] = diffs
        if as_json:
            click.echo(json.dumps(summary, indent=2))
        if diffs:
            for d in diffs:
                click.echo(f"error: {d}", err=True)
            click.echo(f"hint: run `tracec compile {' '.join(map(str, targets))} -o {out_dir}`",
                       err=True)
            sys.exit(1)
        if not as_json:
            console.print(f"[green]ok[/]: {out_dir}/ is up to date with "
                          f"{_counted(bp.results)}")
        return
    changed = build.write(bp, out_dir)
    summary["changed"] = changed
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    table = Table(title=f"compiled {_counted(bp.results)} in {elapsed * 1000:.0f} ms")
    for col in ("spec", "domain", "tasks", "reward levels", "env id"):
        table.add_column(col, no_wrap=True)
    for r in bp.results:
        assert r.ir is not None
        table.add_row(r.path, r.ir.domain, str(len(r.ir.tasks)),
                      " / ".join(f"{lv:g}" for lv in r.ir.levels), f"tracec/{r.ir.name}-v0")
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    console.print(f"wrote {len(changed)} changed file(s) to {out_dir}/" if changed
                  else f"{out_dir}/ already up to date")
    console.print(f"next: tracec check {out_dir}/")


def _counted(results: list) -> str:
    """`7 spec(s)`, or `11 env(s) from 7 spec(s)` when specs declare variants."""
    specs = len({r.path for r in results})
    return f"{specs} spec(s)" if specs == len(results) else \
        f"{len(results)} env(s) from {specs} spec(s)"


@click.command("schema")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Write to a file instead of stdout.")
def schema_cmd(output: Path | None) -> None:
    """Print the JSON Schema of the compiler's IR (what --emit-ir writes)."""
    text = json.dumps(ir_json_schema(), indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
