"""Check a run config against the machine before the first stage: every path, the model, the
agent specs and the device syntax. A problem is one :class:`ConfigError` listing each bad key;
no stage runs, no model loads and nothing is written."""

from __future__ import annotations

import os
from pathlib import Path

from tracec.harness.agents import AgentSpecError, parse_agent_spec
from tracec.llm.device import DeviceError, parse_device, resolve_device
from tracec.llm.loading import ModelNotPrepared, resolve_model
from tracec.pipeline.config import ConfigError, RunConfig
from tracec.targets import data as tdata

# stages that use each part of the config (by name, in run order)
ORDER = ("baseline", "analyze", "specs", "compile", "train", "compose", "heldout_eval",
         "final_eval", "grpo_target")


def problems(cfg: RunConfig, until: str | None = None) -> list[str]:
    """``key: why`` for every setting the stages up to ``until`` cannot use."""
    stages = set(ORDER[: ORDER.index(until) + 1] if until in ORDER else ORDER)
    out: list[str] = []
    if cfg.target.data_dir is None and not os.environ.get(tdata.ENV_VAR):
        out.append(f"target.data_dir: not set and ${tdata.ENV_VAR} is empty; set it to a "
                   "tau2-bench checkout's data/tau2/domains (or \"sample\": the packaged subset)")
    else:
        try:
            data = tdata.resolve_data_dir(cfg.target.data_dir)
            tdata.domain_dir(data, cfg.target.domain)
        except tdata.DataError as exc:
            out.append(f"target.data_dir: {exc}")
    if cfg.specs.source == "dir" and "specs" in stages and not Path(cfg.specs.dir).is_dir():
        out.append(f"specs.dir: {cfg.specs.dir}: no such folder (the folder of .tracec specs)")
    uses_base = cfg.model.agent is None or stages & {"train", "compose", "grpo_target"}
    if uses_base:
        try:
            resolve_model(cfg.model.base)
        except ModelNotPrepared as exc:
            out.append(f"model.base: {exc}")
    agents = [("model.agent", cfg.model.agent)]
    if cfg.model.adapter_agent is not None:
        try:
            agents.append(("model.adapter_agent", cfg.model.adapter_agent.format(
                base=cfg.model.base, adapter="ADAPTER", capability="CAP")))
        except (KeyError, IndexError, ValueError) as exc:
            out.append(f"model.adapter_agent: bad template ({exc}); use {{base}}, {{adapter}}, "
                       "{capability}")
    for key, spec in agents:
        if spec is not None:
            try:
                parse_agent_spec(spec)
            except AgentSpecError as exc:
                out.append(f"{key}: {exc}")
    if parse_device(cfg.device) != "cpu":
        try:
            resolve_device(cfg.device)  # `cuda:99` on a machine with one GPU (or none)
        except DeviceError as exc:
            out.append(f"device: {exc}")
        except ImportError:
            out.append(f"device: {cfg.device!r} needs torch: pip install 'tracec[train]'")
    user = cfg.target.user
    if user != "scripted" and not (user.startswith("llm:") and "@" in user):
        out.append(f"target.user: {user!r}: use scripted or llm:MODEL@URL")
    return out


def preflight(cfg: RunConfig, where: str | Path = "config", until: str | None = None) -> None:
    """Raise :class:`ConfigError` (one line, naming ``where`` and each key) when the run cannot
    start as configured."""
    found = problems(cfg, until)
    if found:
        raise ConfigError(f"{where}: " + "; ".join(found) + " (nothing was run)")
