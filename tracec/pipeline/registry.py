"""The pipeline's stages, in order: the one list that ``runner`` runs and ``report`` reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracec.pipeline import stages as st


@dataclass(frozen=True)
class Stage:
    """A stage: its folder name, what runs it, what its inputs hash is taken over, its title."""

    name: str
    run: Callable[[st.RunContext, bool], dict]
    inputs: Callable[[st.RunContext], Any]
    title: str


STAGES: tuple[Stage, ...] = (
    Stage("baseline", st.run_baseline, st.baseline_inputs, "baseline eval (train split)"),
    Stage("analyze", st.run_analyze, st.analyze_inputs, "analyze failures"),
    Stage("specs", st.run_specs, st.specs_inputs, "specs"),
    Stage("compile", st.run_compile, st.compile_inputs, "compile + check"),
    Stage("train", st.run_train, st.train_inputs, "train adapters"),
    Stage("compose", st.run_compose, st.compose_inputs, "compose"),
    Stage("heldout_eval", st.run_heldout_eval, st.final_inputs, "held-out eval (env seeds)"),
    Stage("final_eval", st.run_final_eval, st.final_inputs, "final eval (test split)"),
    Stage("grpo_target", st.run_grpo_target, st.grpo_inputs, "GRPO-on-target baseline"),
)
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)


def stage(name: str) -> Stage:
    """The stage called ``name`` (``ValueError`` naming the stages otherwise)."""
    for s in STAGES:
        if s.name == name:
            return s
    raise ValueError(f"unknown stage {name!r}: stages are {', '.join(STAGE_NAMES)}")
