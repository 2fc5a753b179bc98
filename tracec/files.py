"""Read user files safely: every problem is one :class:`InputError` naming the file, never a
traceback (wrong encodings, UTF-16, lone surrogates, invalid, deeply nested or huge-number
JSON, invalid TOML, wrong top-level types).

Every command reads JSON, JSONL, TOML and text files through these helpers; the CLI turns an
:class:`InputError` into ``error: <message>`` and exit status 2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: files are not locked
    fcntl = None

__all__ = ["CONFIG_BYTES", "DEFAULT_BYTES", "META_BYTES", "RESULTS_BYTES", "SPEC_BYTES", "InputError",
           "JSONLimitError", "Locked", "decode_json", "exclusive_lock", "parse_json", "read_bytes",
           "read_json", "read_jsonl", "read_text", "read_toml", "require_regular", "require_type",
           "too_deep"]

MAX_JSON_DEPTH = 200
MAX_INT_DIGITS = 4000  # below Python's int-string conversion limit (4300)

_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
         (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class InputError(ValueError):
    """A user file or value that tracec cannot use; ``str()`` is one line naming the file."""


def _where(path: Path | str, text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"{path}:{line}:{col}"


def decode_bytes(raw: bytes, path: Path | str, error: type[Exception] = InputError) -> str:
    """UTF-8 text of ``raw`` (a UTF-8 BOM is dropped); anything else is an InputError."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            raise error(f"{path}: the file is {name} text; tracec reads UTF-8 "
                             f"(convert it, e.g. iconv -f {name} -t UTF-8)")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(f"{path}:{line}:{col}: not valid UTF-8 (byte 0x{raw[exc.start]:02x}); "
                         "save the file as UTF-8") from None


MiB = 1 << 20
# size caps per kind of file (TRACEC_MAX_INPUT_MB raises every one of them)
SPEC_BYTES = 4 * MiB  # a .tracec spec or fragment
CONFIG_BYTES = 1 * MiB  # a TOML config
META_BYTES = 16 * MiB  # adapter_config.json, tracec.json, moe.json, manifests
RESULTS_BYTES = 1024 * MiB  # results, trajectories, tasks files
DEFAULT_BYTES = 256 * MiB
SPECIAL_ENV = "TRACEC_READ_SPECIAL"  # =1: also read FIFOs and devices (still capped)
LIMIT_ENV = "TRACEC_MAX_INPUT_MB"


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n} bytes"


def _cap(limit: int | None) -> int:
    override = os.environ.get(LIMIT_ENV, "").strip()
    if override:
        try:
            mb = float(override)
        except ValueError:
            mb = -1.0
        if math.isfinite(mb) and mb > 0:
            return int(mb * MiB)
    return DEFAULT_BYTES if limit is None else limit


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _stat_error(path: Path | str, what: str, exc: OSError, error: type[Exception]) -> Exception:
    if isinstance(exc, FileNotFoundError):
        return error(f"{path}: cannot read {what}: no such file")
    return error(f"{path}: cannot read {what}: {exc.strerror or exc}")


def require_regular(path: Path | str, what: str = "file", error: type[Exception] = InputError,
                    limit: int | None = None) -> os.stat_result:
    """The stat of ``path`` if it is a regular file within ``limit`` bytes, else ``error``
    (never opens it: a FIFO or a device is refused at once, without blocking)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _stat_error(path, what, exc, error) from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: cannot read {what}: it is a directory")
    if not stat.S_ISREG(st.st_mode):
        if os.environ.get(SPECIAL_ENV) == "1":
            return st
        raise error(f"{path}: cannot read {what}: it is {_file_kind(st.st_mode)}; tracec reads "
                    f"regular files only (copy it to a file, or set {SPECIAL_ENV}=1)")
    cap = _cap(limit)
    if st.st_size > cap:
        raise error(f"{path}: {what} is {_size(st.st_size)}, over the {_size(cap)} limit for a "
                    f"{what} (set {LIMIT_ENV}=<MiB> to raise it)")
    return st


def read_bytes(path: Path | str, what: str = "file", error: type[Exception] = InputError,
               limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (default 256 MiB); FIFOs and
    devices are refused before they are opened (``TRACEC_READ_SPECIAL=1`` reads them, capped)."""
    require_regular(path, what, error, limit)
    cap = _cap(limit)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _stat_error(path, what, exc, error) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) and os.environ.get(SPECIAL_ENV) != "1":  # swapped since
            raise error(f"{path}: cannot read {what}: it is {_file_kind(st.st_mode)}; tracec "
                        "reads regular files only")
        if not stat.S_ISREG(st.st_mode):
            os.set_blocking(fd, True)
        chunks, total = [], 0
        while total <= cap:
            try:
                chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            except OSError as exc:
                raise _stat_error(path, what, exc, error) from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > cap:
        raise error(f"{path}: {what} is over the {_size(cap)} limit for a {what} "
                    f"(set {LIMIT_ENV}=<MiB> to raise it)")
    return b"".join(chunks)


def read_text(path: Path | str, what: str = "file", error: type[Exception] = InputError,
              limit: int | None = None) -> str:
    """The UTF-8 text of a regular file (``error`` when missing, unreadable, not regular, over
    ``limit`` bytes or not UTF-8; every reader here takes ``error``: the caller's own
    InputError subclass)."""
    return decode_bytes(read_bytes(path, what, error, limit), path, error)


class JSONLimitError(ValueError):
    """Why :func:`decode_json` refused a text; each caller words the message itself.

    ``kind``: ``syntax`` (``msg``/``pos`` from :class:`json.JSONDecodeError`), ``int`` (an
    integer of ``digits`` digits, over ``limit``), ``constant`` (``NaN``/``Infinity``: ``text``),
    ``overflow`` (a float that is infinite: ``text``), ``depth`` (containers nested deeper than
    ``limit``), ``recursion`` (the parser itself ran out of stack), ``value`` (another decoding
    error: ``msg``, its first clause)."""

    def __init__(self, kind: str, msg: str = "", pos: int = 0, text: str = "", digits: int = 0,
                 limit: int = 0):
        super().__init__(msg or kind)
        self.kind, self.msg, self.pos, self.text = kind, msg, pos, text
        self.digits, self.limit = digits, limit


class _Refused(ValueError):
    def __init__(self, error: JSONLimitError):
        super().__init__(str(error))
        self.error = error


@functools.lru_cache(maxsize=8)
def _decoder(max_int_digits: int, finite: bool) -> json.JSONDecoder:
    def parse_int(text: str) -> int:
        if len(text) > max_int_digits:
            raise _Refused(JSONLimitError("int", digits=len(text), limit=max_int_digits))
        return int(text)

    def parse_constant(text: str) -> Any:
        raise _Refused(JSONLimitError("constant", text=text))

    def parse_float(text: str) -> float:
        value = float(text)
        if value in (math.inf, -math.inf):
            raise _Refused(JSONLimitError("overflow", text=text))
        return value

    return json.JSONDecoder(parse_int=parse_int, parse_constant=parse_constant,
                            parse_float=parse_float if finite else None)


def too_deep(obj: Any, max_depth: int) -> bool:
    """Whether a list or dict in ``obj`` sits deeper than ``max_depth`` (the top one is 1)."""
    stack = [(obj, 1)]
    while stack:
        x, depth = stack.pop()
        if isinstance(x, dict):
            x = list(x.values())
        elif not isinstance(x, list):
            continue
        if depth > max_depth:
            return True
        stack.extend((y, depth + 1) for y in x if isinstance(y, (dict, list)))
    return False


def decode_json(text: str, max_depth: int, max_int_digits: int, finite: bool = False) -> Any:
    """Decode JSON ``text`` within bounds: nesting at most ``max_depth``, integers of at most
    ``max_int_digits`` digits, no ``NaN``/``Infinity`` (with ``finite``, no number that overflows
    to infinity either). Every failure is one :class:`JSONLimitError`."""
    try:
        obj = _decoder(max_int_digits, finite).decode(text)
    except json.JSONDecodeError as exc:
        raise JSONLimitError("syntax", exc.msg, exc.pos) from None
    except _Refused as exc:
        raise exc.error from None
    except (RecursionError, MemoryError):
        raise JSONLimitError("recursion", limit=max_depth) from None
    except ValueError as exc:  # e.g. Python's int-string conversion limit
        raise JSONLimitError("value", str(exc).split(";")[0]) from None
    # nesting needs an opening bracket per level: few brackets in the text, no walk needed
    if text.count("[") + text.count("{") > max_depth and too_deep(obj, max_depth):
        raise JSONLimitError("depth", limit=max_depth)
    return obj


def _check_surrogates(obj: Any, path: Path | str, error: type[Exception]) -> None:
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.values())
            stack.extend(x)
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                raise error(f"{path}: contains a lone surrogate escape (\\ud800-\\udfff) "
                            "in a string; it is not valid Unicode text") from None


def parse_json(text: str, path: Path | str = "<json>", error: type[Exception] = InputError,
               line: int | None = None) -> Any:
    """Decode JSON text; errors (syntax, depth, huge numbers, NaN) are ``error`` naming
    ``path`` (and ``line``, for one line of a JSONL file)."""
    where = f"{path}:{line}" if line is not None else str(path)
    try:
        obj = decode_json(text, MAX_JSON_DEPTH, MAX_INT_DIGITS)
    except JSONLimitError as exc:
        if exc.kind == "syntax":
            at = (f"{where}:{exc.pos + 1}" if line is not None else _where(path, text, exc.pos))
            raise error(f"{at}: invalid JSON: {exc.msg}") from None
        why = {
            "int": f"invalid JSON: an integer with {exc.digits} digits (at most {exc.limit})",
            "constant": f"invalid JSON: {exc.text} is not valid JSON",
            "recursion": "JSON nested too deeply",
            "depth": f"JSON nested deeper than {MAX_JSON_DEPTH} levels",
        }.get(exc.kind, f"invalid JSON: {exc.msg}")
        raise error(f"{where}: {why}") from None
    if _SURROGATE_ESCAPE.search(text):
        _check_surrogates(obj, where, error)
    return obj


def require_type(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    """``value`` if it is a ``kind``, else an InputError saying what was expected."""
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        ok = False
    else:
        ok = isinstance(value, kind)
    if not ok:
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        names = names.replace("dict", "a JSON object").replace("list", "a JSON array")
        raise InputError(f"{where}: expected {names}, got {_json_kind(value)}")
    return value


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a JSON array", dict: "a JSON object"}.get(type(value), type(value).__name__)


def read_json(path: Path | str, what: str = "JSON file", expect: type | None = None,
              error: type[Exception] = InputError, limit: int | None = None) -> Any:
    """A JSON file's value (``expect``: the top-level type it must have)."""
    obj = parse_json(read_text(path, what, error, limit), path, error)
    if expect is not None:
        try:
            require_type(obj, expect, str(path))
        except InputError as exc:
            raise error(str(exc)) from None
    return obj


def read_jsonl(path: Path | str, what: str = "JSONL file",
               error: type[Exception] = InputError, limit: int | None = RESULTS_BYTES,
               ) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line of a JSON Lines file."""
    for i, line in enumerate(read_text(path, what, error, limit).splitlines(), 1):
        if line.strip():
            yield i, parse_json(line, path, error, line=i)


def read_toml(path: Path | str, what: str = "config",
              error: type[Exception] = InputError, limit: int | None = CONFIG_BYTES,
              ) -> dict[str, Any]:
    """A TOML file's table (errors name the file and, where TOML says it, the line)."""
    text = read_text(path, what, error, limit)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{path}: TOML nested too deeply") from None


class Locked(InputError):
    """Another process holds the lock (the message says which file and pid), or the lock file
    cannot be used (a symbolic link, not a regular file)."""


_HELD: dict[str, int] = {}  # lock files this process holds -> depth (re-entrant)


@contextlib.contextmanager
def exclusive_lock(path: Path | str, what: str = "this folder") -> Iterator[None]:
    """Hold an exclusive, non-blocking lock on ``path`` (created) while the block runs.

    Raises :class:`Locked` when another process holds it; re-entrant within one process. The
    operating system drops the lock when the holder dies (SIGKILL included)."""
    p = Path(path)
    key = str(p.resolve())
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    try:  # never through a symbolic link: a `.lock` linked elsewhere would be truncated
        fd = os.open(p, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        why = ("it is a symbolic link; remove it" if os.path.islink(p)
               else exc.strerror or str(exc))
        raise Locked(f"{p}: cannot use as a lock file: {why}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Locked(f"{p}: cannot use as a lock file: not a regular file; remove it")
    fh = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        try:
            if fcntl is not None:  # not POSIX: no locking
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            raise Locked(f"{what} is in use by another tracec process (pid {holder}); wait "
                         f"for it to finish or use another folder (lock: {p})") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        _HELD[key] = 1
        try:
            yield
        finally:
            del _HELD[key]
    finally:
        fh.close()
