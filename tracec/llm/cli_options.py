"""``--device`` and ``--dtype`` for every command that loads a model (train, eval, compose,
check --model): checked when the command line is parsed, before any work, as one ``Error:``
line that names the option."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from tracec.llm.device import DeviceError, Placement, parse_dtype

DEVICE_HELP = ("Where the model runs: cpu, cpu:N, cuda, cuda:N or mps (under accelerate/torchrun "
               "each process uses its own local device of that kind).")
DTYPE_HELP = "Model weights' dtype: auto (bf16 where the device computes it, fp32 on CPU), bf16, fp16 or fp32."


def check_device(value: str) -> str:
    """The canonical device string; a device that does not exist here is a :class:`DeviceError`
    (only non-CPU devices import torch to look)."""
    return Placement.parse(value).check().device


def _device_cb(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return check_device(value)
    except DeviceError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _dtype_cb(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    try:
        return parse_dtype(value)
    except DeviceError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def device_option(default: str | None = "cpu", help: str = DEVICE_HELP) -> Callable[[Any], Any]:
    return click.option("--device", default=default, show_default=default is not None,
                        callback=_device_cb, help=help)


def dtype_option(help: str = DTYPE_HELP) -> Callable[[Any], Any]:
    return click.option("--dtype", default="auto", show_default=True, callback=_dtype_cb, help=help)
