"""`tracec fmt`: rewrite specs in the canonical layout (`--check`: only report); the formatter itself
is `tracec.lang.fmt`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracec.core.diagnostics import SpecError, render_all
from tracec.files import SPEC_BYTES, InputError, decode_bytes, read_bytes
from tracec.lang.fmt import format_file_text
from tracec.lang.fragments import FRAGMENT_SUFFIX


def _spec_files(paths: tuple[Path, ...]) -> tuple[list[Path], list[Path]]:
    """The specs and shared fragments named by ``paths`` (folders: searched recursively), and
    the symlinks found in a folder that lead out of it (never read or written)."""
    from tracec.compiler.api import find_specs

    out = find_specs(list(paths))
    seen = {p.resolve() for p in out}
    for p in paths:
        if p.is_dir():
            for frag in sorted(p.rglob(f"*{FRAGMENT_SUFFIX}")):
                if frag.resolve() not in seen:
                    seen.add(frag.resolve())
                    out.append(frag)
    folders = [p.resolve() for p in paths if p.is_dir()]
    named = {p.resolve() for p in paths if not p.is_dir()}
    outside = [f for f in out if f.resolve() not in named
               and not any(f.resolve().is_relative_to(d) for d in folders)]
    return [f for f in out if f not in outside], outside


@click.command("fmt")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; list the files that are not formatted and exit 1 (for CI).")
@click.option("--diff", "show_diff", is_flag=True,
              help="Write nothing; print a unified diff of each change.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
def fmt_cmd(paths: tuple[Path, ...], check_only: bool, show_diff: bool, as_json: bool) -> None:
    """Format capability specs and shared fragments (default: specs/) in the canonical layout.

    Folders are searched for *.tracec specs and *.tracec-frag fragments (`use "..."`; a
    symlink that leads out of the folder is skipped, none is written through); a
    fragment is laid out as where a spec uses it, flush left. Only whitespace between tokens
    changes (comments and strings are kept as written), so a formatted spec compiles to the
    same environment; line endings (LF, CRLF, CR) and a byte-order mark are kept. Exit 1
    under --check when a file would change, 2 when one does not parse.

    \b
    Examples:
      tracec fmt specs/
      tracec fmt --check specs/     # CI: fail when a spec is not formatted
      tracec fmt --diff specs/x.tracec
    """
    import difflib

    targets = list(paths) or [Path("specs")]
    for p in targets:
        if not p.exists():
            raise click.ClickException(f"{p}: no such file or folder")
    files, outside = _spec_files(tuple(targets))
    for link in outside:
        click.echo(f"{link}: skipped: a symlink to a file outside the folder", err=True)
    if not files:
        raise click.ClickException(f"no .tracec specs or {FRAGMENT_SUFFIX} fragments in "
                                   f"{', '.join(map(str, targets))}")
    fragments = sum(1 for p in files if p.name.endswith(FRAGMENT_SUFFIX))
    write = not (check_only or show_diff)  # --diff only prints
    changed: list[str] = []
    failed: list[str] = []
    for path in files:
        try:
            raw = read_bytes(path, "spec", limit=SPEC_BYTES)  # FIFOs/devices refused at once
            text = decode_bytes(raw, str(path))
        except InputError as exc:
            click.echo(f"{path}: error: {str(exc).removeprefix(f'{path}: ')}", err=True)
            failed.append(str(path))
            continue
        if raw.startswith(b"\xef\xbb\xbf"):
            text = "\ufeff" + text  # kept: the file is written back as it was read
        try:
            new = format_file_text(text, fragment=path.name.endswith(FRAGMENT_SUFFIX))
        except SpecError as err:
            plain = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
            click.echo(render_all(err.diagnostics, str(path), plain), err=True)
            failed.append(str(path))
            continue
        if new == text:
            continue
        changed.append(str(path))
        if show_diff:
            def lines(t: str) -> list[str]:
                return t.removeprefix("\ufeff").replace("\r\n", "\n").replace(
                    "\r", "\n").splitlines(True)
            click.echo("".join(difflib.unified_diff(
                lines(text), lines(new), f"{path}", f"{path} (formatted)")), nl=False)
        if write:
            if path.is_symlink():
                click.echo(f"{path}: not written: a symlink (format the file it points to)",
                           err=True)
                failed.append(str(path))
                continue
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(new.encode("utf-8", "surrogatepass"))
            tmp.replace(path)
    if as_json:
        click.echo(json.dumps({"ok": not failed and not (check_only and changed),
                               "specs": len(files) - fragments, "fragments": fragments,
                               "changed": changed, "failed": failed},
                              indent=2))
    else:
        verb = "reformatted" if write else "would reformat"
        for name in changed:
            click.echo(f"{verb} {name}", err=True)
        click.echo(f"{len(changed)} of {len(files)} file(s) {verb}"
                   + (f", {len(failed)} failed" if failed else ""), err=True)
    if failed:
        sys.exit(2)
    if check_only and changed:
        click.echo("hint: run `tracec fmt " + " ".join(map(str, targets)) + "`", err=True)
        sys.exit(1)
