"""Generation on a ``trl vllm-serve`` server, with the policy's LoRA merged into its weights.

After every optimiser step the main process merges the adapter, streams the merged base weights
to the server under vLLM's names (as TRL's own GRPO trainer does) and unmerges.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def vllm_named_params(peft_model) -> Iterator[tuple[str, Any]]:
    """Parameters of a peft model whose adapter is merged, named as in the base checkpoint."""
    prefix = getattr(peft_model, "prefix", "lora_")
    for name, param in peft_model.named_parameters():
        name = name.removeprefix("base_model.model.").replace(".base_layer", "")
        if prefix in name or "original_module" in name:
            continue
        yield name.replace("modules_to_save.default.", ""), param.data


class VLLMGenerator:
    """Token-in/token-out sampling on a vLLM server; ``sync`` pushes the current policy."""

    def __init__(self, base_url: str, stop_ids: list[int], client: Any | None = None,
                 weight_sync: bool = True, device: Any = 0) -> None:
        if client is None:
            from trl.generation.vllm_client import VLLMClient

            client = VLLMClient(base_url=base_url)
            if weight_sync:
                client.init_communicator(device=device)
        self.client = client
        self.stop_ids = list(stop_ids)

    def sync(self, peft_model) -> int:
        """Push merged weights; returns how many tensors were sent."""
        peft_model.merge_adapter()
        try:
            named = list(vllm_named_params(peft_model))
            meta = [(n, str(t.dtype).removeprefix("torch."), list(t.shape)) for n, t in named]
            self.client.update_named_params(meta, iter(named))
        finally:
            peft_model.unmerge_adapter()
        self.client.reset_prefix_cache()
        return len(named)

    def __call__(self, prompts: list[list[int]], max_new_tokens: int,
                 temperature: float) -> list[list[int]]:
        """Completions cut after their first stop token (the stop token kept)."""
        out = self.client.generate(prompts=prompts, n=1, temperature=temperature,
                                   max_tokens=max_new_tokens,
                                   generation_kwargs={"stop_token_ids": self.stop_ids})
        results = []
        for ids in out["completion_ids"]:
            cut: list[int] = []
            for t in ids:
                cut.append(t)
                if t in self.stop_ids:
                    break
            results.append(cut)
        return results
