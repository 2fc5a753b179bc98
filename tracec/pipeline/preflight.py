"""Check a run config against the machine before the first stage: every path, the model, the
agent specs and the device syntax. A problem is one :class:`ConfigError` listing each bad key;
no stage runs, no model loads and nothing is written."""

from __future__ import annotations

import os
from pathlib import Path

from tracec.compiler.api import SPEC_SUFFIX, compile_file
from tracec.core.diagnostics import did_you_mean
from tracec.harness.agents import AgentSpecError, parse_agent_spec
from tracec.llm.adapters import AdapterError, check_adapter_dir
from tracec.llm.device import DeviceError
from tracec.llm.loading import ModelNotPrepared, resolve_model
from tracec import files
from tracec.pipeline.config import ConfigError, RunConfig, http_url, key_position
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
    if not cfg.placement.on_cpu:
        try:
            cfg.placement.check()  # `cuda:99` on a machine with one GPU (or none)
        except DeviceError as exc:
            out.append(f"device: {exc}")
        except ImportError:
            out.append(f"device: {cfg.device!r} needs torch: pip install 'tracec[train]'")
    user = cfg.target.user
    if user != "scripted" and not (user.startswith("llm:") and "@" in user):
        out.append(f"target.user: {user!r}: use scripted or llm:MODEL@URL")
    elif user != "scripted":
        try:
            http_url(user.rpartition("@")[2], "target.user's URL")
        except ValueError as exc:
            out.append(f"target.user: {exc}")
    out += split_problems(cfg, stages)
    out += spec_problems(cfg, stages)
    out += init_adapter_problems(cfg, stages)
    return out


def split_problems(cfg: RunConfig, stages: set[str]) -> list[str]:
    """target.train_split and target.test_split name splits of the domain's data (a data
    folder that does not resolve is target.data_dir's problem, reported above)."""
    wanted = [("target.train_split", cfg.target.train_split, {"baseline", "analyze", "grpo_target"}),
              ("target.test_split", cfg.target.test_split, {"final_eval"})]
    try:
        data = tdata.resolve_data_dir(cfg.target.data_dir)
        tdata.domain_dir(data, cfg.target.domain)
    except tdata.DataError:
        return []
    out = []
    for key, split, users in wanted:
        if stages & users:
            try:
                tdata.load_split(data, cfg.target.domain, split)
            except tdata.DataError as exc:
                out.append(f"{key}: {exc}")
    return out


SPEC_SCAN_ENTRIES = 20_000  # files and folders walked under specs.dir before it is refused as too broad


def _scan_specs(folder: Path) -> list[Path] | None:
    """The ``.tracec`` files under ``folder`` (sorted), or None when it holds more than
    :data:`SPEC_SCAN_ENTRIES` entries (``/`` or a home folder, not a spec folder)."""
    found, seen = [], 0
    for root, dirs, names in os.walk(folder):
        seen += len(dirs) + len(names)
        if seen > SPEC_SCAN_ENTRIES:
            return None
        dirs.sort()
        found += [Path(root) / n for n in names if n.endswith(SPEC_SUFFIX)]
    return sorted(found)


def spec_problems(cfg: RunConfig, stages: set[str]) -> list[str]:
    """specs.dir is a folder of specs that compile, and every specs.mapping value names one of
    them (of the target's domain when specs.match_domain)."""
    s = cfg.specs
    if s.source != "dir" or "specs" not in stages:
        return []
    folder = Path(s.dir)
    if not folder.is_dir():
        return [f"specs.dir: {s.dir}: no such folder (the folder of .tracec specs)"]
    resolved = folder.resolve()
    paths = None if resolved in (Path(resolved.anchor), Path.home().resolve()) else _scan_specs(folder)
    if paths is None:
        return [f"specs.dir: {s.dir}: more than {SPEC_SCAN_ENTRIES} files and folders, not a spec "
                "folder; point it at the folder of your .tracec specs"]
    if not paths:
        return [f"specs.dir: {s.dir}: no {SPEC_SUFFIX} specs in it"]
    out, names, other_domain = [], set(), set()
    for path in paths:
        res = compile_file(path)
        if not res.ok or res.ir is None:
            first = next((d for d in res.diagnostics if d.severity == "error"), None)
            where = f"{path}:{first.span.line}:{first.span.column}: {first.message}" if first else str(path)
            out.append(f"specs.dir: {where} (the spec does not compile: tracec compile {path})")
            continue
        mine = res.ir.domain == cfg.target.domain or not s.match_domain
        for ir in [res.ir] + [v.ir for v in res.variants if v.ir is not None]:
            (names if mine else other_domain).add(ir.name)
    if out:
        return out
    for cap, spec in sorted(s.mapping.items()):
        if spec in names:
            continue
        if spec in other_domain:
            out.append(f"specs.mapping.{cap}: spec {spec!r} is not a {cfg.target.domain} spec "
                       "(set specs.match_domain = false to train it anyway)")
        else:
            hint = did_you_mean(spec, names)
            out.append(f"specs.mapping.{cap}: no spec named {spec!r} in {s.dir}"
                       + (f"; {hint}" if hint else f" (specs there: {', '.join(sorted(names)[:8])})"))
    return out


def init_adapter_problems(cfg: RunConfig, stages: set[str]) -> list[str]:
    """train.settings.init_adapter is a usable LoRA folder."""
    start = cfg.train.settings.get("init_adapter")
    if not start or "train" not in stages:
        return []
    try:
        check_adapter_dir(start)
    except AdapterError as exc:
        return [f"train.settings.init_adapter: {exc}"]
    return []


def preflight(cfg: RunConfig, where: str | Path = "config", until: str | None = None) -> None:
    """Raise :class:`ConfigError` (one line, naming ``where`` and each key) when the run cannot
    start as configured."""
    found = problems(cfg, until)
    if found:
        raise ConfigError(f"{_at(where, found[0])}: " + "; ".join(found) + " (nothing was run)")


def _at(where: str | Path, problem: str) -> str:
    """``where:line:col`` of the key a problem names, when ``where`` is the config file."""
    try:
        text = files.read_text(where, "run config", limit=files.CONFIG_BYTES)
    except (files.InputError, TypeError):
        return str(where)
    pos = key_position(text, problem.split(":")[0].split("."))
    return f"{where}:{pos[0]}:{pos[1]}" if pos else str(where)
