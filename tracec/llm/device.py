"""Devices and dtypes named on the command line: ``cpu``, ``cpu:N``, ``cuda``, ``cuda:N``, ``mps``;
``auto``, ``bf16``, ``fp16``, ``fp32``.

``parse_device``/``parse_dtype`` check the syntax only (no torch: they run before any work);
``resolve_device``/``resolve_dtype`` need torch and check that the device exists.
"""

from __future__ import annotations

import re
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


def device_kind(spec: str) -> str:
    """``cpu``, ``cuda`` or ``mps`` of a device string."""
    return parse_device(spec).split(":")[0]


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


def placement(spec: str) -> str:
    """The device string to place tensors on: ``resolve_device``'s, with ``cpu:N`` as ``cpu``
    (one CPU device; some loaders, e.g. safetensors, refuse ``cpu:0``)."""
    dev = resolve_device(spec)
    return "cpu" if dev.type == "cpu" else str(dev)


def resolve_dtype(spec: str | None, device: Any) -> Any:
    """The ``torch.dtype`` for ``spec`` on ``device``; ``auto`` is bf16 where the device computes
    it natively (CUDA with bf16 support), fp16 on other CUDA and on mps, fp32 on CPU."""
    import torch

    name = parse_dtype(spec)
    kind = torch.device(device).type
    if name == "auto":
        if kind == "cuda":
            name = "bf16" if native_bf16(torch.device(device).index) else "fp16"
        elif kind == "mps":
            name = "fp16"
        else:
            name = "fp32"
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def native_bf16(index: int | None = None) -> bool:
    """Whether the CUDA device computes bf16 natively (compute capability 8.0+, Ampere on):
    V100 (7.0) and T4 (7.5) only emulate it, which ``torch.cuda.is_bf16_supported()`` counts."""
    import torch

    major, _ = torch.cuda.get_device_capability(index)
    return major >= 8
