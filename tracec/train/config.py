"""Training configuration (pydantic): what `tracec train` records in checkpoints and tracec.json."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tracec.core.seeds import SeedRange, check_training_range
from tracec.llm.device import Placement, parse_device, parse_dtype

# a run's seed is spread over the seed range in strides of this prime (trainer and SFT demos)
SEED_STRIDE = 1_000_003

# the local rollout engines (the remote ones are tracec.llm.serving.SERVING_ENGINES)
RolloutEngine = Literal["kv", "naive"]
ROLLOUT_ENGINES: tuple[str, ...] = get_args(RolloutEngine)


class LoraSettings(BaseModel):
    """LoRA adapter shape."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(16, ge=1, le=4096)
    alpha: int = Field(32, ge=1, le=1 << 20)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    targets: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )


class TrainConfig(BaseModel):
    """GRPO hyper-parameters. Defaults follow the TRACE reference where it states them.
    Every number is finite and bounded (a setting past a bound is a typo, not a plan)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str = "smollm2"
    env: str = ""
    lora: LoraSettings = Field(default_factory=LoraSettings)
    group_size: int = Field(8, ge=2, le=1024, description="G rollouts per env seed")
    groups_per_step: int = Field(4, ge=1, le=4096, description="kept groups wanted per optimiser "
                                 "step, per process (a step of N processes trains on up to N x this)")
    steps: int = Field(50, ge=0, le=10**7, description="GRPO steps (0: only the SFT warm start, if any)")
    learning_rate: float = Field(2e-5, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    temperature: float = Field(1.0, ge=0, le=100)
    max_turns: int | None = Field(None, ge=1, le=10_000, description="cap on assistant turns (env's own if None)")
    max_new_tokens: int = Field(256, ge=1, le=1 << 17, description="per assistant turn")
    max_total_tokens: int | None = Field(
        None, ge=16, description="per episode, prompt included (None: the model's context length)")
    hint_share: float = Field(0.0, ge=0.0, le=1.0, description="share of each group shown the hint")
    epsilon: float = Field(0.2, ge=0)
    epsilon_high: float = Field(0.28, ge=0)
    beta: float = Field(0.0, ge=0, description="KL weight to the adapter-disabled model")
    resample_dropped: bool = Field(False, description="DAPO: draw new seeds for dropped groups")
    max_resample_rounds: int = Field(2, ge=0, le=1000)
    updates_per_batch: int = Field(1, ge=1, le=1000, description="optimiser passes over each rollout batch")
    micro_batch: int = Field(4, ge=1, le=1 << 16, description="sequences per forward/backward")
    gen_batch: int = Field(32, ge=1, le=1 << 16, description="sequences per generate() call")
    rollout_engine: RolloutEngine = Field(
        "kv", description="kv: prefill shared prompts once, keep KV caches across turns; "
        "naive: re-prefill every conversation each turn with generate()")
    loss_forward: Literal["shared", "rows"] = Field(
        "shared", description="shared: a group's prompt is computed once in the loss pass and its "
        "completions attend to it; rows: every row recomputes its prompt")
    grad_checkpointing: bool | None = Field(
        None, description="recompute activations in backward (None: only when needed to fit memory_gb)")
    memory_gb: float | None = Field(
        8.0, gt=0, le=1 << 20, description="memory a step is planned to fit in on its device "
        "(None: what the device has free)")
    checkpoint_every: int = Field(10, ge=1, le=10**7)
    seed: int = 0
    device: str = Field("cpu", description="cpu, cpu:N, cuda, cuda:N or mps (under accelerate: "
                        "each process's own device)")
    dtype: str = Field("auto", description="auto, bf16, fp16 or fp32 (auto: bf16 on CUDA with bf16, "
                       "fp32 on CPU)")
    serving_engine: Literal["vllm", "sglang"] | None = Field(
        None, description="generate rollouts on this serving engine at `server` (None: locally)")
    server: str | None = Field(None, description="the serving engine's URL (implies vllm if no engine)")
    server_timeout: float = Field(240.0, gt=0, description="seconds to wait for the server to answer")
    collective_timeout: float = Field(
        300.0, gt=0, le=86400, description="seconds any collective between processes (an update's "
        "all-reduce, a gather) may wait for a peer before every process stops, naming the cause "
        "(NCCL's own default is 600)")
    rollout_timeout: float = Field(
        3600.0, gt=0, le=7 * 86400, description="seconds processes wait for each other's rollouts "
        "(they meet after rollouts, so the update's collectives never wait on generation)")
    weight_sync: Literal["lora", "nccl"] = Field(
        "lora", description="lora: hot-load the adapter by name each step; nccl: stream merged "
        "weights (vLLM --weight-transfer-config)")
    vllm_server: str | None = Field(None, description="deprecated: serving_engine='vllm', server=URL")
    train_seeds: tuple[int, int] = Field((0, 10**9), description="env seeds [start, stop) training "
                                         "draws from; must stay below the held-out 10^9")
    warmup_sft: int = Field(0, ge=0, le=10**7, description="behaviour-cloning steps on oracle demos before GRPO")
    sft_batch: int = Field(4, ge=1, le=1 << 16, description="oracle demonstrations per SFT step")
    sft_lr: float = Field(2e-4, gt=0, description="SFT learning rate")
    init_adapter: str | None = Field(None, description="start from this adapter's weights")

    @field_validator("device")
    @classmethod
    def _device_name(cls, v: str) -> str:
        return parse_device(v)  # `tpu:7` is refused here, before any work

    @field_validator("dtype")
    @classmethod
    def _dtype_name(cls, v: str) -> str:
        return parse_dtype(v)

    @property
    def placement(self) -> Placement:
        """Where the run trains (``device``) and in which dtype (``dtype``), as one value."""
        return Placement(self.device, self.dtype)

    @model_validator(mode="after")
    def _serving(self) -> TrainConfig:
        if self.vllm_server:  # the deprecated spelling, recorded as the new one
            if self.server and self.server != self.vllm_server:
                raise ValueError("give --server or the deprecated --vllm-server, not both")
            self.server, self.vllm_server = self.vllm_server, None
            self.serving_engine = self.serving_engine or "vllm"
        if self.server and not self.server.startswith(("http://", "https://")):
            raise ValueError(f"server {self.server!r} is not an http:// or https:// URL")
        if self.serving_engine and not self.server:
            raise ValueError(f"serving engine {self.serving_engine} needs the server's URL (--server URL)")
        if self.server and not self.serving_engine:
            self.serving_engine = "vllm"
        if self.weight_sync == "nccl" and self.serving_engine == "sglang":
            raise ValueError("weight sync nccl is implemented for vLLM only; use --weight-sync lora")
        return self

    @model_validator(mode="after")
    def _seeds_below_heldout(self) -> TrainConfig:
        check_training_range(SeedRange(start=self.train_seeds[0], stop=self.train_seeds[1]))
        return self
