"""Devices and dtypes named on the command line: ``cpu``, ``cpu:N``, ``cuda``, ``cuda:N``, ``mps``;
``auto``, ``bf16``, ``fp16``, ``fp32``.

:class:`Placement` is the one value a command builds from its ``--device``/``--dtype`` (or a
config's ``device``/``dtype``) and passes down to whatever loads or places a model; its
``on_cpu`` is the one "is this a CPU?" test. ``parse_device``/``parse_dtype`` check the syntax
only (no torch: they run before any work); ``resolve_device``/``resolve_dtype`` need torch and
check that the device exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

DEVICE_KINDS = ("cpu", "cuda", "mps")
DTYPES = ("auto", "bf16", "fp16", "fp32")
_DEVICE = re.compile(r"^(cpu|cuda|mps)(?::(\d{1,4}))?$")
_DTYPE_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
                  "float": "fp32"}


class DeviceError(ValueError):
    """A device or dtype that does not exist here or is not one tracec knows; one line."""


def parse_device(spec: str) -> str:
    """The canonical device string (``cuda:0`` stays ``cuda:0``; ``CPU`` becomes ``cpu``)."""
    text = str(spec).strip().lower()
    m = _DEVICE.match(text)
    if not m:
        raise DeviceError(f"unknown device {spec!r}: use cpu, cpu:N, cuda, cuda:N or mps")
    if m.group(1) == "mps" and m.group(2) not in (None, "0"):
        raise DeviceError(f"unknown device {spec!r}: Apple's mps has one device (mps)")
    return text


def parse_dtype(spec: str | None) -> str:
    """The canonical dtype name (``auto``, ``bf16``, ``fp16``, ``fp32``)."""
    text = "auto" if spec is None else str(spec).strip().lower()
    text = _DTYPE_ALIASES.get(text, text)
    if text not in DTYPES:
        raise DeviceError(f"unknown dtype {spec!r}: use auto, bf16, fp16 or fp32")
    return text


def resolve_device(spec: str) -> Any:
    """A ``torch.device`` that exists on this machine, or :class:`DeviceError`."""
    import torch

    text = parse_device(spec)
    kind, _, index = text.partition(":")
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise DeviceError(f"device {spec!r}: no CUDA device here (torch "
                              f"{torch.__version__}{'' if torch.version.cuda else ', a CPU build'})")
        if index and int(index) >= count:
            raise DeviceError(f"device {spec!r}: this machine has {count} CUDA device(s) "
                              f"(cuda:0 … cuda:{count - 1})")
    elif kind == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise DeviceError(f"device {spec!r}: Apple's mps backend is not available here")
    return torch.device(text)


def dtype_name(spec: str | None, device: Any) -> str:
    """``bf16``, ``fp16`` or ``fp32``: ``spec`` with ``auto`` resolved for ``device`` (bf16 where
    the device computes it natively, CUDA with bf16 support; fp16 on other CUDA and on mps; fp32
    on CPU). Torch is imported for a CUDA device's ``auto`` only."""
    name = parse_dtype(spec)
    if name != "auto":
        return name
    text = str(device)
    kind, _, index = text.partition(":")
    if kind == "cuda":
        return "bf16" if native_bf16(int(index) if index else None) else "fp16"
    return "fp16" if kind == "mps" else "fp32"


def resolve_dtype(spec: str | None, device: Any) -> Any:
    """The ``torch.dtype`` for ``spec`` on ``device`` (``auto`` as :func:`dtype_name` resolves it)."""
    import torch

    name = dtype_name(spec, torch.device(device))
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def native_bf16(index: int | None = None) -> bool:
    """Whether the CUDA device computes bf16 natively (compute capability 8.0+, Ampere on):
    V100 (7.0) and T4 (7.5) only emulate it, which ``torch.cuda.is_bf16_supported()`` counts."""
    import torch

    major, _ = torch.cuda.get_device_capability(index)
    return major >= 8


DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclass(frozen=True)
class Placement:
    """Where a model runs and in which dtype, resolved once at the boundary (a command's
    ``--device``/``--dtype``, a config's ``device``/``dtype``) and passed down unchanged.

    ``device`` is the canonical device string (``cpu``, ``cpu:N``, ``cuda``, ``cuda:N``,
    ``mps``); ``dtype`` a dtype name (``auto``, ``bf16``, ``fp16``, ``fp32``) or None for the
    checkpoint's own. Building one is torch-free; :attr:`torch_device` and :attr:`torch_dtype`
    (import torch) check that the device exists here and resolve ``auto`` for it.
    """

    device: str = "cpu"
    dtype: str | None = "auto"

    @classmethod
    def parse(cls, device: str | None = "cpu", dtype: str | None = "auto") -> Placement:
        """A placement from option or config text (syntax only; :class:`DeviceError` if bad)."""
        return cls(parse_device(device or "cpu"), None if dtype is None else parse_dtype(dtype))

    @property
    def kind(self) -> str:
        """``cpu``, ``cuda`` or ``mps``."""
        return self.device.split(":")[0]

    @property
    def on_cpu(self) -> bool:
        """Whether the model runs on the CPU (``cpu`` and ``cpu:N`` alike)."""
        return self.kind == "cpu"

    def check(self) -> Placement:
        """This placement, after checking that its device exists here (torch is imported for a
        non-CPU device only); :class:`DeviceError` otherwise."""
        if not self.on_cpu:
            resolve_device(self.device)
        return self

    @property
    def target(self) -> str:
        """The device string to place tensors on: ``cpu:N`` is ``cpu`` (one CPU device; some
        loaders, e.g. safetensors, refuse ``cpu:0``)."""
        return "cpu" if self.on_cpu else self.device

    @property
    def torch_device(self) -> Any:
        """The ``torch.device`` of :attr:`target`, checked to exist here."""
        return resolve_device(self.target)

    @property
    def torch_dtype(self) -> Any:
        """The ``torch.dtype`` (``auto`` resolved for the device), or None: the checkpoint's own."""
        return None if self.dtype is None else resolve_dtype(self.dtype, self.torch_device)

    @property
    def dtype_bytes(self) -> int:
        """Bytes per weight element, torch-free: ``auto`` is 4 on CPU, 2 on an accelerator (bf16
        or fp16), the checkpoint's own counts as ``auto``."""
        if self.dtype in DTYPE_BYTES:
            return DTYPE_BYTES[self.dtype]
        return 4 if self.on_cpu else 2


CPU = Placement()  # the CPU in the ``auto`` dtype (fp32 there): ``--device``/``--dtype``'s defaults
AS_SAVED = Placement(dtype=None)  # the CPU in the checkpoint's own dtype: the library's default
