"""Run-time failures of generated code, reported at the spec line that caused them.

Each generated module carries ``SPEC_LINES``, a table of (first module line, spec line, spec
column) runs. When world generation, a task or a reward rule fails, the innermost traceback
frame in the module is mapped back through the table, and the failure is printed in the
compiler's format: ``path:line:col: error: ...``, the source line with a caret, a hint and the
seed. The path is the spec as the user gave it (compiled on the fly), or the recorded spec
path found from the working directory or next to the generated package, shown relative to the
working directory so that it opens. A run of code from a shared fragment (`use "..."`) also
names its fragment (``SPEC_FRAGMENTS``, paths relative to the spec's folder) and its line
there: the failure is shown at the fragment's line, and names the spec's `use` line.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import sys
import types
from pathlib import Path
from typing import Any

from tracec import files
from tracec.core.diagnostics import Diagnostic, Span

SOURCE_ATTR = "__tracec_source__"  # (path as typed, spec text) set on modules compiled on the fly


MAX_SPEC_ANCESTORS = 6  # how far up from the generated package the recorded spec is looked for


def _module_of(cap: Any) -> types.ModuleType | None:
    fn = getattr(cap, "build_world", None)
    name = getattr(fn, "__module__", None)
    return sys.modules.get(name) if name else None


def spec_position(cap: Any, tb: types.TracebackType | None) -> tuple[int, ...] | None:
    """The spec (line, column) of the innermost traceback frame inside the generated module;
    for code from a shared fragment, also (SPEC_FRAGMENTS index, fragment line, column)."""
    module = _module_of(cap)
    table = getattr(module, "SPEC_LINES", None)
    filename = getattr(module, "__file__", None)
    if not table or not filename:
        return None
    lineno = caller = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            caller = lineno
            lineno = tb.tb_lineno
            helper = tb.tb_frame.f_code.co_name.startswith("_frag_")
        tb = tb.tb_next
    if lineno is None:
        return None
    starts = [row[0] for row in table]
    i = bisect.bisect_right(starts, lineno) - 1
    if i < 0 or table[i][1] <= 0:
        return None
    if helper and caller is not None:  # a fragment generated once: at the `use` that called it
        j = bisect.bisect_right(starts, caller) - 1
        if j >= 0 and table[j][1] > 0:
            return tuple(table[j][1:3]) + tuple(table[i][3:])
    return tuple(table[i][1:])


def fragment_source(cap: Any, spec_path: str, index: int) -> tuple[str, str] | None:
    """(path to show, text) of the module's fragment ``index``, next to the spec (None when it
    cannot be read)."""
    names = getattr(_module_of(cap), "SPEC_FRAGMENTS", ())
    if not 0 <= index < len(names):
        return None
    path = os.path.join(os.path.dirname(spec_path), names[index])
    try:
        return path, files.read_text(path, "fragment", limit=files.SPEC_BYTES)
    except files.InputError:
        return None


def spec_source(cap: Any) -> tuple[str, str | None]:
    """(path to show, spec text or None when it cannot be found or has changed)."""
    module = _module_of(cap)
    given = getattr(module, SOURCE_ATTR, None)
    if given is not None:
        return given
    recorded = getattr(cap, "spec_path", "") or ""
    if not recorded:
        return "<spec>", None
    candidates = [Path(recorded)]
    filename = getattr(module, "__file__", None)
    if filename:  # the folder it was compiled from: an ancestor of the generated package
        candidates += [folder / recorded for folder in
                       list(Path(filename).resolve().parents)[1:MAX_SPEC_ANCESTORS + 1]]
    for c in candidates:
        try:
            text = files.read_text(c, "spec", limit=files.SPEC_BYTES)  # never blocks on a FIFO
        except files.InputError:
            continue
        sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        if sha != getattr(cap, "spec_sha256", sha):
            continue  # edited since it was compiled: its line numbers no longer apply
        try:
            shown = os.path.relpath(c)
        except ValueError:  # another drive (Windows)
            shown = str(c)
        return shown, text
    return recorded, None


def _hint(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, TypeError) and "'NoneType'" in text:
        return ("a value here is None: a `first(...)` found nothing, or a field is empty; pick "
                "from the records that have it (`pick(x for x in xs if ...)`) or test `!= None`")
    if type(exc).__name__ == "Unsatisfiable":
        return ("no record of the worlds drawn passes this condition; loosen it, or fix the "
                "fields in `seed` so that some records do")
    if isinstance(exc, LookupError):
        return "a key or id is missing from the world drawn for this seed"
    if isinstance(exc, ZeroDivisionError):
        return "a divisor is 0 for this seed; guard it with `max(x, 1)` or `... if x else ...`"
    return "replay it with `tracec play` at this seed"


def located(cap: Any, exc: BaseException, what: str, where: str,
            message: str | None = None) -> str | None:
    """The failure in the compiler's format, or None when no spec position is known."""
    pos = spec_position(cap, exc.__traceback__)
    if pos is None:
        return None
    line, col = pos[0], pos[1]
    path, source = spec_source(cap)
    note = ""
    if len(pos) == 5:  # code from a shared fragment: show the fragment's line
        frag = fragment_source(cap, path, pos[2])
        if frag is not None and 1 <= pos[3] <= len(frag[1].splitlines()):
            note = f" (in the fragment used at {path}:{line})"
            path, source = frag
            line, col = pos[3], pos[4]
    end = col + 1
    if source is not None:
        lines = source.splitlines()
        if 1 <= line <= len(lines):
            text = lines[line - 1]
            if col <= 0:
                col = len(text) - len(text.lstrip()) + 1
            end = len(text.rstrip()) + 1
    col = max(col, 1)
    diag = Diagnostic(
        message=(message or f"{what} failed at {where}: {type(exc).__name__}: {exc}") + note,
        span=Span(line=line, column=col, end_line=line, end_column=max(end, col + 1)),
        hint=_hint(exc), code="R100")
    return diag.render(path, source)
