"""Write outputs that touch only tracec's own files.

An output folder that tracec creates gets a marker file, :data:`MARKER`, listing the entries
tracec made in it. A command then

- refuses an existing, non-empty folder that carries no marker (:func:`claim_dir`), unless every
  entry in it is one the command itself writes (a folder from before markers existed);
- deletes only entries the marker lists, and only when the caller asks after its validation
  (:meth:`OwnedDir.remove_own`);
- never writes over one of its own inputs (:func:`refuse_input`);
- writes files atomically and never through a symbolic link (:func:`write_atomic`,
  :func:`open_append`).

Every refusal is one :class:`OutputError` line saying what to do.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from tracec.files import InputError

__all__ = ["MARKER", "OutputError", "OwnedDir", "claim_dir", "claim_outputs", "open_append", "refuse_input",
           "write_atomic"]

MARKER = ".tracec-owned"
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class OutputError(InputError):
    """An output that tracec will not write (the message says why and what to do)."""


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and
    ``os.replace``: a crash leaves the old file or the new one. A symbolic link at ``path`` is
    refused (its target is never written)."""
    path = Path(path)
    if _is_link(path):
        raise OutputError(f"{path}: is a symbolic link; tracec does not write through links "
                          "(remove the link or choose another output)")
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def open_append(path: str | Path, flags: int = os.O_RDWR | os.O_APPEND):
    """Open (create) ``path`` for appending without following a symbolic link; a link or a
    non-regular file is an :class:`OutputError`. Returns a binary file object."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_CREAT | NOFOLLOW | CLOEXEC, 0o644)
    except OSError as exc:
        if _is_link(path):
            raise OutputError(f"{path}: is a symbolic link; tracec does not write through links "
                              "(remove the link)") from None
        raise OutputError(f"{path}: cannot open for writing: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutputError(f"{path}: not a regular file; remove it or choose another output")
    return os.fdopen(fd, "r+b" if flags & os.O_RDWR else "ab")


def refuse_input(output: str | Path, inputs: Iterable[str | Path], what: str = "output") -> None:
    """Refuse an ``output`` that is one of the command's ``inputs`` (same resolved path or
    same file), or a folder holding one of them."""
    out = Path(output)
    out_resolved = out.resolve()
    for item in inputs:
        p = Path(item)
        same = p.resolve() == out_resolved
        if not same and p.exists() and out.exists():
            try:
                same = os.path.samefile(p, out)
            except OSError:
                same = False
        if same:
            raise OutputError(f"{output}: the {what} is also an input of this command ({item}); "
                              "write it elsewhere")


class OwnedDir:
    """A folder tracec owns: its marker lists the entries tracec made in it."""

    def __init__(self, path: Path, command: str, entries: set[str]):
        self.path, self.command, self.entries = path, command, entries

    def _save(self) -> None:
        body = {"tool": "tracec", "command": self.command, "entries": sorted(self.entries)}
        write_atomic(self.path / MARKER, json.dumps(body, indent=1) + "\n")

    def record(self, *names: str) -> None:
        """Note entries (top-level names in the folder) as made by tracec; creates the folder
        and its marker when needed."""
        new = {n for n in names if n and n != MARKER} - self.entries
        if new:
            self.entries |= new
            self._save()

    def owns(self, name: str) -> bool:
        return name in self.entries

    def remove_own(self, keep: Iterable[str] = ()) -> list[str]:
        """Delete the entries tracec made (except ``keep``); anything else stays. Returns the
        names deleted."""
        kept = set(keep)
        gone = []
        for name in sorted(self.entries - kept):
            p = self.path / name
            if p.is_dir() and not _is_link(p):
                shutil.rmtree(p)
            elif p.exists() or _is_link(p):
                p.unlink()
            else:
                continue
            gone.append(name)
        return gone


def _read_marker(path: Path) -> set[str] | None:
    marker = path / MARKER
    if not marker.is_file() or _is_link(marker):
        return None
    try:
        body = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or body.get("tool") != "tracec":
        return None
    entries = body.get("entries")
    return {e for e in entries if isinstance(e, str) and "/" not in e and e not in ("", ".", "..")} \
        if isinstance(entries, list) else set()


def claim_dir(path: str | Path, command: str, own_names: Callable[[Path], bool],
              flag: str = "--out") -> OwnedDir:
    """The output folder ``path`` as an :class:`OwnedDir`; nothing is created until the
    command, once validated, records what it will write (:meth:`OwnedDir.record` creates the
    folder and its marker).

    ``own_names(entry)`` says whether an entry of an unmarked folder is one this command writes
    (a folder from before markers existed is adopted only when every entry is). Refuses, with
    one line, an empty path, a non-folder and any other non-empty folder."""
    if str(path).strip() == "":
        raise OutputError(f"{flag}: empty path; name a new or empty folder")
    p = Path(path)
    if _is_link(p):
        raise OutputError(f"{flag} {p}: is a symbolic link; name the folder itself")
    if p.exists() and not p.is_dir():
        raise OutputError(f"{flag} {p}: exists and is not a folder; choose a new folder")
    entries = _read_marker(p) if p.is_dir() else None
    if entries is not None:
        return OwnedDir(p, command, entries)
    present = sorted(p.iterdir()) if p.is_dir() else []
    foreign = [e.name for e in present if not own_names(e)]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" (+{len(foreign) - 3} more)" if len(foreign) > 3 else "")
        raise OutputError(f"{flag} {p}: the folder holds files tracec did not write ({shown}); "
                          "choose a new or empty folder (tracec never writes into or clears "
                          "a folder it did not create)")
    return OwnedDir(p, command, {e.name for e in present})


def claim_outputs(path: str | Path, command: str, outputs: Collection[str],
                  inputs: Iterable[str | Path] = (), flag: str = "-o") -> OwnedDir:
    """:func:`claim_dir` for a command that writes the top-level entries ``outputs``, after
    refusing a folder, or an output in it, that is one of the command's ``inputs``."""
    inputs = list(inputs)
    refuse_input(path, inputs, "output folder")
    for name in outputs:
        refuse_input(Path(path) / name, inputs, "output")
    return claim_dir(path, command, lambda e: e.name in outputs, flag=flag)
