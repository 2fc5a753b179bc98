"""Training configuration (pydantic): what `tracec train` records in checkpoints and tracec.json."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# a run's seed is spread over the seed range in strides of this prime (trainer and SFT demos)
SEED_STRIDE = 1_000_003


class LoraSettings(BaseModel):
    """LoRA adapter shape."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    targets: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )


class TrainConfig(BaseModel):
    """GRPO hyper-parameters. Defaults follow the TRACE reference where it states them."""

    model_config = ConfigDict(extra="forbid")

    model: str = "smollm2"
    env: str = ""
    lora: LoraSettings = Field(default_factory=LoraSettings)
    group_size: int = Field(8, ge=2, description="G rollouts per env seed")
    groups_per_step: int = Field(4, ge=1, description="kept groups wanted per optimiser step")
    steps: int = Field(50, ge=0, description="GRPO steps (0: only the SFT warm start, if any)")
    learning_rate: float = Field(2e-5, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    temperature: float = Field(1.0, ge=0)
    max_turns: int | None = Field(None, ge=1, description="cap on assistant turns (env's own if None)")
    max_new_tokens: int = Field(256, ge=1, description="per assistant turn")
    max_total_tokens: int | None = Field(
        None, ge=16, description="per episode, prompt included (None: the model's context length)")
    hint_share: float = Field(0.0, ge=0.0, le=1.0, description="share of each group shown the hint")
    epsilon: float = Field(0.2, ge=0)
    epsilon_high: float = Field(0.28, ge=0)
    beta: float = Field(0.0, ge=0, description="KL weight to the adapter-disabled model")
    resample_dropped: bool = Field(False, description="DAPO: draw new seeds for dropped groups")
    max_resample_rounds: int = Field(2, ge=0)
    updates_per_batch: int = Field(1, ge=1, description="optimiser passes over each rollout batch")
    micro_batch: int = Field(4, ge=1, description="sequences per forward/backward")
    gen_batch: int = Field(32, ge=1, description="sequences per generate() call")
    rollout_engine: Literal["kv", "naive"] = Field(
        "kv", description="kv: prefill shared prompts once, keep KV caches across turns; "
        "naive: re-prefill every conversation each turn with generate()")
    loss_forward: Literal["shared", "rows"] = Field(
        "shared", description="shared: a group's prompt is computed once in the loss pass and its "
        "completions attend to it; rows: every row recomputes its prompt")
    grad_checkpointing: bool | None = Field(
        None, description="recompute activations in backward (None: only when needed to fit memory_gb)")
    memory_gb: float | None = Field(
        8.0, gt=0, description="RAM a step is planned to fit in (None: what is available)")
    checkpoint_every: int = Field(10, ge=1)
    seed: int = 0
    device: str = "cpu"
    vllm_server: str | None = Field(None, description="trl vllm-serve URL; generate there")
    train_seeds: tuple[int, int] = Field((0, 10**9), description="env seeds [start, stop) training "
                                         "draws from; must stay below the held-out 10^9")
    warmup_sft: int = Field(0, ge=0, description="behaviour-cloning steps on oracle demos before GRPO")
    sft_batch: int = Field(4, ge=1, description="oracle demonstrations per SFT step")
    sft_lr: float = Field(2e-4, gt=0, description="SFT learning rate")
    init_adapter: str | None = Field(None, description="start from this adapter's weights")

    @model_validator(mode="after")
    def _seeds_below_heldout(self) -> TrainConfig:
        from tracec.targets.seeds import SeedRange, check_training_range

        check_training_range(SeedRange(start=self.train_seeds[0], stop=self.train_seeds[1]))
        return self
