"""The library entry points of composition: build, train and load composed models.

``tracec compose`` (:mod:`tracec.compose.cli`) and ``tracec run``'s compose stage
(:mod:`tracec.pipeline.stages`) both train through :func:`train_composed`; agents load composed
models with :func:`load_composed`. Routing decisions are made here, by the caller of the model:
:func:`with_routers` attaches the per-trajectory and classifier routers that
``ComposedModel.generate`` runs for those ``moe.json`` routing modes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from safetensors.torch import load_file

from tracec import files
from tracec.compose.classify import generate_classified
from tracec.compose.config import (
    FORMAT,
    AdapterRef,
    ClassifierSpec,
    MoeConfig,
    Routing,
    Weighting,
    adapter_base_model,
    adapter_weights_file,
    sha256_file,
)
from tracec.compose.errors import ComposeError
from tracec.compose.model import ComposedModel, compose, load_base
from tracec.compose.routing import generate_per_trajectory
from tracec.compose.training import (
    ComposeTrainConfig,
    RoutingStats,
    encode_all,
    evaluate_ce,
    select_successful,
    split,
    train_gates,
)
from tracec.llm.device import AS_SAVED, Placement


def _trajectory(cm: ComposedModel, batch: list[list[dict]], tools: list[dict] | None,
                max_new_tokens: int, temperature: float, seed: int | None) -> list[str]:
    return generate_per_trajectory(cm, batch, tools, max_new_tokens, temperature, seed,
                                   cm.config.trajectory_router)


def _classifier(cm: ComposedModel, batch: list[list[dict]], tools: list[dict] | None,
                max_new_tokens: int, temperature: float, seed: int | None) -> list[str]:
    return generate_classified(cm, batch, tools, max_new_tokens, temperature, seed,
                               cm.config.classifier)


ROUTERS: dict[str, Callable[..., list[str]]] = {"trajectory": _trajectory, "classifier": _classifier}


def with_routers(cm: ComposedModel) -> ComposedModel:
    """``cm`` with the routers of every non-token routing mode attached."""
    cm.routers.update(ROUTERS)
    return cm


@dataclass
class ComposeResult:
    """What :func:`train_composed` did (also written to ``OUT/summary.json``)."""

    out: str
    trajectories: int
    successful: int
    examples: int
    skipped_long: int
    held_out: int
    slots: list[str]
    steps: int
    final: dict
    routing: dict
    ce: dict[str, float]
    ce_on: str
    stats: RoutingStats | None = None  # the token shares behind ``routing``

    def summary(self) -> dict:
        return {"out": self.out, "steps": self.steps, "final": self.final, "routing": self.routing,
                "ce": self.ce, "ce_on": self.ce_on}


def train_composed(adapter_dirs: list[str | Path], rows: list[dict], out_dir: str | Path,
                   cfg: ComposeTrainConfig, *, data: list[str] | None = None,
                   base: str | None = None, top_k: int = 1, weighting: Weighting = "st",
                   routing: Routing = "token", classifier: ClassifierSpec | dict | None = None,
                   holdout: float = 0.1, place: Placement = AS_SAVED,
                   on_start: Callable[[dict], None] | None = None,
                   on_step: Callable[[dict], None] | None = None) -> ComposeResult:
    """Train the gates over ``adapter_dirs`` on the successful ``rows`` (trajectories), save the
    composed model into ``out_dir`` (``moe.json``, ``gates.safetensors``, ``routing.json``,
    ``metrics.jsonl``, ``summary.json``) and measure assistant-token cross-entropy on the held-out
    rows for the composed model and every single slot. ``routing`` (and ``classifier``, its
    options) is the inference routing saved in ``moe.json``.

    ``on_start(info)`` gets the data counts and the step total before training; ``on_step(row)``
    each step's metrics. Raises :class:`ComposeError` for unusable inputs.
    """
    good = select_successful(rows, cfg.min_reward)
    if not good:
        raise ComposeError(f"none of the {len(rows)} trajectories is successful; nothing to train on")
    cm = build_composed(list(adapter_dirs), base=base, top_k=top_k, weighting=weighting,
                        place=place)
    tok = cm._require_tokenizer()
    examples, skipped = encode_all(tok, good, cfg.max_length)
    if not examples:
        raise ComposeError(f"every successful trajectory is longer than max_length={cfg.max_length}")
    train_set, held = split(examples, holdout, cfg.seed)
    total = cfg.max_steps or math.ceil(len(train_set) / cfg.batch_size) * cfg.epochs
    if on_start is not None:
        on_start({"trajectories": len(rows), "successful": len(good), "examples": len(examples),
                  "skipped_long": skipped, "held_out": len(held), "slots": list(cm.slots),
                  "total_steps": total})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "metrics.jsonl", "w", encoding="utf-8") as fh:
        def step(row: dict) -> None:
            fh.write(json.dumps(row) + "\n")
            if on_step is not None:
                on_step(row)

        metrics, stats = train_gates(cm, train_set, cfg, tok.pad_token_id, step)
    spec = ClassifierSpec.model_validate(classifier) if classifier is not None else cm.config.classifier
    cm.config = cm.config.model_copy(update={"routing": routing, "classifier": spec, "training": {
        **cfg.model_dump(), "data": [str(d) for d in data or []], "trajectories": len(train_set),
        "held_out": len(held), "steps": len(metrics)}})
    cm.save(out)
    routing_stats = stats.to_json()
    (out / "routing.json").write_text(json.dumps(routing_stats, indent=2) + "\n")
    eval_set = held or train_set
    ce = {"composed": evaluate_ce(cm, eval_set, tok.pad_token_id, cfg.batch_size)}
    for slot, name in enumerate(cm.slots):
        ce[name] = evaluate_ce(cm, eval_set, tok.pad_token_id, cfg.batch_size, force=slot)
    result = ComposeResult(str(out), len(rows), len(good), len(examples), skipped, len(held),
                           list(cm.slots), len(metrics), metrics[-1], routing_stats, ce,
                           "held_out" if held else "train", stats)
    (out / "summary.json").write_text(json.dumps(result.summary(), indent=2) + "\n")
    return result


def build_composed(adapter_dirs: list[str | Path], base: str | None = None, top_k: int = 1,
                   weighting: Weighting = "st", place: Placement = AS_SAVED) -> ComposedModel:
    """Load the base model named by the adapters (or ``base``) and compose the adapters."""
    dirs = [Path(d).expanduser() for d in adapter_dirs]
    for d in dirs:
        adapter_weights_file(d)
    if base is None:
        bases = {adapter_base_model(d) for d in dirs}
        if None in bases or len(bases) != 1:
            found = ", ".join(sorted(str(b) for b in bases))
            raise ComposeError(f"adapters name different or no base models ({found}); pass --base")
        base = bases.pop()
    model, tokenizer, _ = load_base(base, place)
    return with_routers(compose(model, dirs, base, top_k, weighting, tokenizer))


def _resolve_adapter_path(ref: AdapterRef, composed_dir: Path) -> Path:
    path = Path(ref.path)
    if not path.is_absolute():
        path = composed_dir / path
    if not path.exists():
        raise ComposeError(f"adapter {ref.name!r}: folder {path} not found")
    return path


def load_composed(composed_dir: str | Path, place: Placement = AS_SAVED,
                  adapter_dirs: list[str | Path] | None = None,
                  routing: Routing | None = None) -> ComposedModel:
    """Load a composed model saved by :meth:`ComposedModel.save`; verifies adapter hashes/order.

    ``routing`` overrides moe.json's routing mode (per token or one adapter per trajectory).
    """

    root = Path(composed_dir).expanduser()
    if not (root / "moe.json").is_file():
        raise ComposeError(f"{root}: not a composed model (no moe.json)")
    try:
        config = MoeConfig.model_validate_json(files.read_text(root / "moe.json", "moe.json",
                                                               error=ComposeError,
                                                               limit=files.META_BYTES))
    except ValueError as exc:
        raise ComposeError(f"{root / 'moe.json'}: invalid ({exc})") from None
    if config.format != FORMAT:
        raise ComposeError(f"{root / 'moe.json'}: format {config.format!r}, expected {FORMAT!r}")
    paths = ([Path(p) for p in adapter_dirs] if adapter_dirs
             else [_resolve_adapter_path(r, root) for r in config.adapters])
    if len(paths) != len(config.adapters):
        raise ComposeError(f"moe.json lists {len(config.adapters)} adapters, got {len(paths)}")
    refs = []
    for i, (ref, path) in enumerate(zip(config.adapters, paths)):
        found = sha256_file(adapter_weights_file(path))
        if found != ref.sha256:
            other = [r.name for r in config.adapters if r.sha256 == found]
            why = (f"it is adapter {other[0]!r}: the order differs from moe.json" if other
                   else "the weights changed since composition")
            raise ComposeError(f"adapter #{i} ({ref.name!r}) at {path}: sha256 mismatch — {why}")
        if ref.config_sha256 is not None:
            found_cfg = sha256_file(path / "adapter_config.json")
            if found_cfg != ref.config_sha256:
                raise ComposeError(
                    f"adapter #{i} ({ref.name!r}) at {path}: adapter_config.json changed since "
                    "composition (sha256 mismatch; rank, alpha or target modules may differ) — "
                    "restore it or compose again")
        refs.append(ref.model_copy(update={"path": str(path.resolve())}))
    model, tokenizer, _ = load_base(config.base_model, place)
    composed = compose(model, paths, config.base_model, config.top_k, config.weighting, tokenizer, refs)
    composed.config = config.model_copy(update={"routing": routing}) if routing else config
    state = load_file(str(root / "gates.safetensors"), device=place.target)
    missing, unexpected = composed.gates.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ComposeError(f"{root / 'gates.safetensors'}: gate tensors do not match "
                           f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
    return with_routers(composed)
