"""The run config (``tracec.toml``): pydantic models loaded from TOML (see docs/pipeline.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tracec import files
from tracec.core.diagnostics import did_you_mean
from tracec.core.seeds import HELDOUT_START, eval_range
from tracec.llm.device import Placement, parse_device
from tracec.train.config import LoraSettings, TrainConfig


class ConfigError(ValueError):
    """The run config is missing or invalid (reported without a traceback)."""


def http_url(value: str | None, key: str) -> str | None:
    """``value`` when it is an ``http://`` or ``https://`` URL with a host (a ``file://`` or
    bare-host endpoint is a typo, refused before any stage)."""
    if value is None:
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{key} = {value!r}: expected an http:// or https:// URL with a host, "
                         "e.g. http://localhost:8000/v1")
    return value


class _Strict(BaseModel):
    """Unknown keys, wrong types (``"4"`` for an int) and inf/nan are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class TargetSettings(_Strict):
    """The τ² target the agent is evaluated on."""

    domain: Literal["airline", "retail"] = "airline"
    data_dir: str | None = Field(None, description="τ² data dir (default $TRACEC_TAU2_DATA)")
    train_split: str = "train"
    test_split: str = "test"
    train_tasks: int | None = Field(None, ge=1, le=1_000_000, description="first N tasks of the train split")
    test_tasks: int | None = Field(None, ge=1, le=1_000_000, description="first N tasks of the test split")
    trials: int = Field(1, ge=1, le=1000)
    user: str = Field("scripted", description="scripted, or an LLM user spec (see tracec eval)")
    max_turns: int = Field(30, ge=1, le=10_000)
    max_errors: int = Field(10, ge=1, le=10_000)
    batch_size: int = Field(4, ge=1, le=4096)


class ModelSettings(_Strict):
    """The base model, and how the agent is served for evaluation."""

    base: str = Field("smollm2", description="short name, local path or HF id")
    agent: str | None = Field(
        None, description="agent spec of the base model for evals (default local:<base>); "
        "e.g. openai:Qwen/Qwen3-8B@http://localhost:8000/v1")
    adapter_agent: str | None = Field(
        None, description="agent spec template for one adapter: {base}, {adapter}, {capability} "
        "(default local:{base}+adapter:{adapter})")
    max_new_tokens: int = Field(256, ge=1, le=1 << 17)
    temperature: float = Field(0.0, ge=0.0, le=100.0)


class LabelerSettings(_Strict):
    kind: Literal["offline", "llm"] = "offline"
    endpoint: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    runs: int = Field(10, ge=1, le=1000)
    batch_size: int = Field(4, ge=1, le=4096)
    concurrency: int = Field(4, ge=1, le=256)

    @model_validator(mode="after")
    def _needs_endpoint(self) -> LabelerSettings:
        http_url(self.endpoint, "labeler.endpoint")
        if self.kind == "llm" and not (self.endpoint and self.model):
            raise ValueError("labeler.kind = 'llm' needs labeler.endpoint and labeler.model")
        return self


class ThresholdSettings(_Strict):
    """TRACE's selection: Cov ≥ ρ and Δ ≥ δ in ≥ K runs (K default: 80 % of the runs)."""

    rho: float = Field(0.10, ge=0.0, le=1.0)
    delta: float = Field(0.20, ge=-1.0, le=1.0)
    k: int | None = Field(None, ge=1, le=1000)


class SpecSettings(_Strict):
    """Where specs come from and which of them are trained."""

    source: Literal["dir", "propose"] = "dir"
    dir: str = Field("specs", description="spec folder (source = 'dir')")
    train_all_specs: bool = Field(False, description="train every spec, not only selected ones")
    match_domain: bool = Field(True, description="only specs of the target's domain")
    mapping: dict[str, str] = Field(
        default_factory=dict, description="selected capability -> spec capability name")
    endpoint: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_tries: int = Field(4, ge=1, le=100)
    check_seeds: int = Field(16, ge=1, le=100_000, description="seeds for the offline env checks")

    @model_validator(mode="after")
    def _needs_endpoint(self) -> SpecSettings:
        http_url(self.endpoint, "specs.endpoint")
        if self.source == "propose" and not (self.endpoint and self.model):
            raise ValueError("specs.source = 'propose' needs specs.endpoint and specs.model")
        return self


# train.settings keys the run sets itself, and where the config sets them instead: a key maps to
# one place only, so it can never collide with what the run passes to the trainer
RUN_OWNED = {"model": "model.base", "env": "the specs the run selects (specs.*)",
             "device": "the top-level device"}


def _explain(e: Any, fields: Any = ()) -> str:
    """A pydantic error's message, naming a quoted number or flag as the typo it is, and the
    field meant by an unknown key (``fields``: the names it may take)."""
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "extra_forbidden" and e["loc"]:
        hint = did_you_mean(str(e["loc"][-1]), fields)
        msg += f"; {hint}" if hint else ""
    if isinstance(e.get("input"), str) and e["type"] in ("int_type", "float_type", "bool_type"):
        msg += f", got the string {e['input'][:40]!r} (write it without quotes)"
    return msg


def _train_errors(exc: ValidationError) -> str:
    def names(loc: tuple) -> Any:
        return LoraSettings.model_fields if loc[:1] == ("lora",) else TrainConfig.model_fields

    return "; ".join(f"train.settings.{'.'.join(map(str, e['loc'])) or '(all)'}: "
                     f"{_explain(e, names(e['loc']))}" for e in exc.errors())


class TrainSettings(_Strict):
    """GRPO settings for every adapter: any TrainConfig field except model/env/device, with
    TrainConfig's names and TOML's types (``rank = "8"`` is refused, not read as 8)."""

    settings: dict[str, Any] = Field(default_factory=dict)
    max_adapters: int | None = Field(None, ge=1, le=10_000, description="train at most this many specs")

    @model_validator(mode="after")
    def _valid(self) -> TrainSettings:
        bad = sorted(set(RUN_OWNED) & set(self.settings))
        if bad:
            raise ValueError("; ".join(f"train.settings.{k}: train.settings may not set {k} "
                                       f"(set {RUN_OWNED[k]})" for k in bad))
        try:  # JSON mode: TOML's arrays are tuples, ints are floats, nothing else is coerced
            TrainConfig.model_validate_json(json.dumps(self.settings), strict=True)
        except ValidationError as exc:
            raise ValueError(_train_errors(exc)) from None
        return self


class ComposeSettings(_Strict):
    """The composed model: gates trained on oracle demos (token / trajectory routing), or the
    paper's classifier routing (the base model picks adapters per task; no gate training)."""

    enabled: bool = True
    demo_episodes: int = Field(4, ge=1, le=100_000, description="oracle episodes per capability env for the gates")
    top_k: int = Field(1, ge=1, le=64)
    routing: Literal["token", "trajectory", "classifier"] = "token"
    top_p: float = Field(0.9, gt=0, le=1, description="classifier routing: nucleus over adapters")
    classifier_scoring: Literal["labels", "likelihood"] = Field(
        "labels", description="classifier routing: label-token probabilities or description likelihood")
    epochs: int = Field(1, ge=1, le=10_000)
    max_steps: int | None = Field(None, ge=1, le=10**7)
    batch_size: int = Field(4, ge=1, le=4096)
    lr: float = Field(5e-3, gt=0, le=10)
    alpha: float = Field(1e-2, ge=0, le=1000)
    max_length: int = Field(1024, ge=8, le=1 << 17)
    holdout: float = Field(0.0, ge=0.0, le=0.5)


class FinalEvalSettings(_Strict):
    """Which models the final eval compares, on the τ² test split and on held-out env seeds."""

    base: bool = True
    adapters: bool = True
    composed: bool = True
    env_tasks: int = Field(0, ge=0, le=1_000_000, description="held-out seeds per trained capability env "
                           "(0: no env eval); the report pairs every model on them")
    env_first_seed: int = Field(HELDOUT_START, ge=HELDOUT_START, le=2**31 - 1,
                                description="first held-out env seed (seeds are tasks)")
    env_cross: bool = Field(False, description="evaluate each adapter on every trained env, "
                            "not only its own")
    env_batch_size: int = Field(25, ge=1, le=4096, description="env episodes in lockstep")

    @model_validator(mode="after")
    def _seeds_below_limit(self) -> FinalEvalSettings:
        if self.env_tasks:  # refused here, before any stage, not in the held-out eval
            eval_range(self.env_first_seed, self.env_tasks, "final_eval.env_first_seed")
        return self


class BaselineSettings(_Strict):
    """GRPO on the τ² target itself with the same rollout budget (the paper's baseline)."""

    grpo_on_target: bool = False


class BudgetSettings(_Strict):
    train_rollouts: int | None = Field(
        None, ge=1, le=10**9, description="training episodes for all adapters together; caps steps")


class RunConfig(_Strict):
    """One ``tracec.toml``."""

    name: str = "tracec-run"
    seed: int = Field(0, ge=0, le=2**31 - 1)
    device: str = "cpu"
    target: TargetSettings = Field(default_factory=TargetSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    labeler: LabelerSettings = Field(default_factory=LabelerSettings)
    thresholds: ThresholdSettings = Field(default_factory=ThresholdSettings)
    specs: SpecSettings = Field(default_factory=SpecSettings)
    train: TrainSettings = Field(default_factory=TrainSettings)
    compose: ComposeSettings = Field(default_factory=ComposeSettings)
    final_eval: FinalEvalSettings = Field(default_factory=FinalEvalSettings)
    baseline: BaselineSettings = Field(default_factory=BaselineSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)

    @field_validator("device")
    @classmethod
    def _device_syntax(cls, value: str) -> str:
        parse_device(value)
        return value

    @property
    def placement(self) -> Placement:
        """The run's device; models load in their checkpoint's own dtype (a run names none)."""
        return Placement.parse(self.device, None)

    def base_agent(self) -> str:
        return self.model.agent or f"local:{self.model.base}"

    def adapter_agent(self, adapter: str, capability: str) -> str:
        tmpl = self.model.adapter_agent or "local:{base}+adapter:{adapter}"
        return tmpl.format(base=self.model.base, adapter=adapter, capability=capability)


def _resolve_paths(cfg: RunConfig, root: Path) -> RunConfig:
    """Relative data/spec paths in the file are relative to the config file's folder."""

    def fix(p: str | None) -> str | None:
        if p is None or Path(p).is_absolute() or p == "sample":  # "sample": the packaged τ² subset
            return p
        return str((root / p).resolve())

    target = cfg.target.model_copy(update={"data_dir": fix(cfg.target.data_dir)})
    specs = cfg.specs.model_copy(update={"dir": fix(cfg.specs.dir)})
    train = cfg.train
    if isinstance(train.settings.get("init_adapter"), str):
        settings = {**train.settings, "init_adapter": fix(train.settings["init_adapter"])}
        train = train.model_copy(update={"settings": settings})
    base = cfg.model.base
    if ("/" in base or base.startswith(".")) and (root / base).exists():
        base = str((root / base).resolve())
    model = cfg.model.model_copy(update={"base": base})
    return cfg.model_copy(update={"target": target, "specs": specs, "model": model,
                                  "train": train})


def _fields_at(loc: tuple) -> Any:
    """The field names of the config section at ``loc`` (its last part is the key)."""
    model: Any = RunConfig
    for part in loc[:-1]:
        field = model.model_fields.get(part)
        model = field.annotation if field is not None else None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return ()
    return model.model_fields


def _errors(exc: ValidationError) -> str:
    out = []
    for e in exc.errors():
        msg = _explain(e, _fields_at(e["loc"]))
        # a model check's message names its own keys (``train.settings.lora.rank: ...``)
        out.append(msg if e["type"] == "value_error" and msg.split(":")[0].startswith(
            ".".join(map(str, e["loc"]))) and e["loc"] else
            f"{'.'.join(map(str, e['loc'])) or '(top)'}: {msg}")
    return "; ".join(out)


def _header(keys: list[str]) -> re.Pattern[str]:
    dotted = r"\s*\.\s*".join(rf'"?{re.escape(k)}"?' for k in keys)
    return re.compile(rf"^\s*\[\s*{dotted}\s*\]\s*(#.*)?$")


def key_position(text: str, keys: list[str]) -> tuple[int, int] | None:
    """1-based (line, column) where the TOML ``text`` sets the key at path ``keys`` (in its
    table, a dotted key or an inline table), or of the table's header; None when not found."""
    lines = text.splitlines()
    start, rest = 0, keys
    for n in range(len(keys), 0, -1):  # the deepest table header on the path
        found = next((i for i, ln in enumerate(lines) if _header(keys[:n]).match(ln)), None)
        if found is not None:
            start, rest = found + 1, keys[n:]
            break
    if not rest:
        return (start, lines[start - 1].index("[") + 1) if start else None
    top = re.compile(rf'^\s*"?{re.escape(rest[0])}"?\s*[=.]')
    last = re.compile(rf'(^|[\s{{,.])"?{re.escape(rest[-1])}"?\s*=')
    for i in range(start, len(lines)):
        if lines[i].lstrip().startswith("["):
            break  # the next table
        if top.match(lines[i]):
            m = last.search(lines[i])
            col = m.start() + len(m.group(1)) + 1 if m else len(lines[i]) - len(lines[i].lstrip()) + 1
            return i + 1, col
    return None


def _error_keys(exc: ValidationError) -> list[str]:
    """The key path of the first error: its location, or the key a model check's message names."""
    e = exc.errors()[0]
    keys = [str(k) for k in e["loc"] if not isinstance(k, int)]
    named = e["msg"].removeprefix("Value error, ").split(":")[0].split(" ")[0]
    if e["type"] == "value_error" and keys and named.startswith(".".join(keys)):
        keys = named.split(".")
    return keys


def parse_config(data: dict, root: Path | str = ".", where: str = "config",
                 text: str | None = None) -> RunConfig:
    """Validate a parsed config; ``text`` (the TOML) puts the first bad key's line and column
    into the error: ``path:line:col: key: why``."""
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as exc:
        pos = key_position(text, _error_keys(exc)) if text is not None else None
        at = f"{where}:{pos[0]}:{pos[1]}" if pos else where
        raise ConfigError(f"{at}: {_errors(exc)}") from None
    return _resolve_paths(cfg, Path(root))


def load_config(path: str | Path) -> RunConfig:
    """Read and validate a TOML run config; raises :class:`ConfigError` with a readable message."""
    path = Path(path)
    try:
        data = files.read_toml(path, "run config", limit=files.CONFIG_BYTES)
    except files.InputError as exc:
        raise ConfigError(str(exc)) from None
    if not data:
        raise ConfigError(f"{path}: the config is empty; set at least [target] data_dir and "
                          "[model] base (examples: configs/*.toml, docs/pipeline.md)")
    text = files.read_text(path, "run config", limit=files.CONFIG_BYTES)
    return parse_config(data, path.resolve().parent, str(path), text)
