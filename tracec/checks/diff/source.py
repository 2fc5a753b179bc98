"""The two versions `tracec diff` compares: a spec file, or a spec at a git revision, compiled
in memory (nothing is written into generated_envs/).

A spec that does not compile, a missing file or a bad revision is a :class:`DiffError` whose
``str()`` is one located line (``path:line:col: message``, as `tracec compile` prints it).
"""

from __future__ import annotations

import posixpath
import re
import subprocess
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path

from tracec.compiler.api import compile_text, display_path
from tracec.compiler.ir import CapabilityIR
from tracec.files import InputError, decode_bytes, read_text
from tracec.lang.fragments import FRAGMENT_SUFFIX, MAX_FRAGMENT_BYTES, MAX_USES, use_lines
from tracec.lang.parser import MAX_SOURCE_BYTES

GIT_TIMEOUT_S = 30
MAX_REV_CHARS = 200
MAX_LINK_HOPS = 8  # symlinks followed from a committed spec or fragment to its file
_NOT_REV = re.compile(r"[\x00-\x20\x7f]")  # git refs never hold spaces or control characters
_USES = re.compile(r'^[ \t]*use[ \t]+"', re.MULTILINE)


class DiffError(Exception):
    """A version that cannot be compared; ``str()`` is one line naming the file and the fix."""


@dataclass
class Version:
    """One compiled version of a spec."""

    label: str  # as shown to the reviewer: the path, or REV:path
    ir: CapabilityIR
    module: types.ModuleType
    # `variant NAME { ... }` envs (same world, tasks and rewards; another prompt budget)
    variants: dict[str, tuple[CapabilityIR, types.ModuleType]] = field(default_factory=dict)


def _first_error(result, label: str) -> str:
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if not errors:  # pragma: no cover - compile_text reports why a spec has no IR
        return f"{label}: does not compile"
    first = min(errors, key=lambda d: (d.span.line, d.span.column))
    where = f"{label}:{first.span.line}:{first.span.column}" if first.span.line else label
    more = (
        f" (+{len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
        if len(errors) > 1
        else ""
    )
    hint = f"; hint: {first.hint}" if first.hint else ""
    text = " ".join(f"{where}: {first.message}{hint}{more}".split())
    return text if len(text) <= 400 else text[:397] + "..."


def compile_version(
    text: str,
    label: str,
    tag: str,
    base_dir: Path | None = None,
    display_dir: str = "",
    spec_path: str | None = None,
) -> Version:
    """Compile ``text`` and load its modules (``tag``: ``old``/``new``; each compile loads
    into a private package of its own, so the two versions never share a module)."""
    result = compile_text(
        text, label, spec_path=spec_path, base_dir=base_dir, display_dir=display_dir
    )
    if not result.ok or result.code is None or result.ir is None:
        raise DiffError(_first_error(result, label))
    module = result.module  # in a private package of its own: never the other version's
    assert module is not None
    module.__tracec_source__ = (label, text)  # run-time errors name this version
    variants = {}
    for v in result.variants:
        vmod = v.module  # beside its base's module, which it imports
        if v.ir is not None and vmod is not None:
            vmod.__tracec_source__ = (label, text)
            variants[v.ir.name] = (v.ir, vmod)
    return Version(label=label, ir=result.ir, module=module, variants=variants)


def from_file(path: Path, tag: str) -> Version:
    """The version in a spec file (its `use` fragments read from its folder)."""
    if path.is_dir():
        raise DiffError(f"{path}: is a folder; give one .tracec spec")
    try:
        text = read_text(path, "spec")
    except InputError as exc:
        raise DiffError(str(exc)) from None
    parent = str(path.parent)
    return compile_version(
        text,
        str(path),
        tag,
        base_dir=path.parent,
        display_dir="" if parent == "." else parent,
        spec_path=display_path(path),
    )


def _git(args: list[str], cwd: Path, what: str) -> bytes:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise DiffError("--rev needs git, which is not installed (or not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"{what}: git took longer than {GIT_TIMEOUT_S}s") from None
    if proc.returncode != 0:
        why = (
            " ".join(proc.stderr.decode("utf-8", "replace").split())
            or f"git exited {proc.returncode}"
        )
        why = why.removeprefix("fatal: ")
        raise DiffError(f"{what}: {why[:300]}")
    return proc.stdout


def _target(rev: str, name: str, cwd: Path, what: str) -> str:
    """``name`` (relative to ``cwd``) with committed symlinks followed at ``rev``: the path of
    the file whose contents git holds."""
    for _ in range(MAX_LINK_HOPS):
        entry = _git(["ls-tree", "-z", rev, "--", name], cwd, what).split(b"\0")[0]
        if not entry.startswith(b"120000 "):
            return name
        link = _git(["cat-file", "blob", entry.split()[2].decode("ascii")], cwd, what)
        link_text = link.decode("utf-8", "replace")
        if link_text.startswith("/") or len(link) > 4096:
            raise DiffError(f"{what}: a symlink to {link_text[:200]!r} (outside the repository)")
        name = posixpath.normpath(posixpath.join(posixpath.dirname(name), link_text))
    raise DiffError(f"{what}: more than {MAX_LINK_HOPS} symlinks in a row")


def _show(rev: str, name: str, cwd: Path, limit: int, what: str) -> str:
    name = _target(rev, name, cwd, what)
    size = _git(["cat-file", "-s", f"{rev}:./{name}"], cwd, what).strip()
    if not size.isdigit() or int(size) > limit:
        raise DiffError(
            f"{what}: {size.decode('ascii', 'replace')} bytes, more than the {limit} "
            "a spec may have"
        )
    raw = _git(["show", f"{rev}:./{name}"], cwd, what)
    try:
        return decode_bytes(raw, what)
    except InputError as exc:
        raise DiffError(str(exc)) from None


def check_rev(rev: str) -> str:
    """``rev`` if it can be a git revision (any branch name: ``фича``, ``fix#12``; never an
    option), else a DiffError; git itself says when no such revision exists."""
    if not rev or len(rev) > MAX_REV_CHARS or rev.startswith("-") or _NOT_REV.search(rev):
        raise DiffError(f"--rev {rev!r}: not a git revision (e.g. HEAD~1, main, a commit hash)")
    return rev


def _fragments_at(rev: str, folder: Path, text: str, into: Path) -> None:
    """Copy the fragments that ``text`` `use`s (and theirs), read at ``rev`` from ``folder``,
    into ``into``: only those, however many the folder holds (at most one over the `use`
    limit, so that the compiler reports it)."""
    todo, seen = [text], set()
    while todo and len(seen) <= MAX_USES:
        for m in use_lines(todo.pop()).values():
            name = m.group("path")
            if name in seen or len(seen) > MAX_USES or not name.endswith(FRAGMENT_SUFFIX) \
                    or name.startswith("/") or ".." in name.split("/"):
                continue  # a bad path: the compiler names it
            seen.add(name)
            try:
                body = _show(rev, name, folder, MAX_FRAGMENT_BYTES, f"{rev}:{folder / name}")
            except DiffError:
                continue  # a fragment missing at REV: the compiler names it at its `use` line
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
            todo.append(body)


def from_revision(path: Path, rev: str, tag: str) -> Version:
    """The version of spec ``path`` at git revision ``rev`` (``git show REV:path``; its `use`
    fragments are read at the same revision)."""
    check_rev(rev)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise DiffError(f"{path}: no such folder {folder}")
    label = f"{rev}:{path}"
    text = _show(rev, path.name, folder, MAX_SOURCE_BYTES, label)
    parent = str(path.parent)
    shown = "" if parent == "." else parent
    if not _USES.search(text):
        return compile_version(
            text, label, tag, base_dir=None, display_dir=shown, spec_path=display_path(path)
        )
    with tempfile.TemporaryDirectory(prefix="tracec-diff-") as tmp:
        _fragments_at(rev, folder, text, Path(tmp))
        return compile_version(
            text, label, tag, base_dir=Path(tmp), display_dir=shown, spec_path=display_path(path)
        )
