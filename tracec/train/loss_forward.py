"""The GRPO loss pass's forward: log-probabilities of the trained tokens of a micro-batch of rows.

Two ways, same numbers (to float rounding; tests/train/test_train_loss_forward.py):

* ``rows``: every row is its own right-padded sequence, prompt included; one batched forward
  (:func:`tracec.train.grpo.token_logprobs`). A group of G episodes computes its shared prompt
  G times, forward and backward.
* ``shared``: rows whose context before their first trained token is the same (the G episodes of a
  group share the hint-free first prompt) are packed into one sequence
  ``[prompt | completion 1 | completion 2 | …]`` with a block attention mask: the prompt attends
  causally to itself, each completion to the whole prompt and causally to itself, never to the
  other completions; RoPE positions restart at ``len(prompt)`` for every completion. The prompt is
  computed once per micro-batch, and since it is an ordinary part of the graph, the LoRA gradient
  through its keys and values (which every completion reads) is summed over the completions, as
  the G separate rows would sum it. Only positions that predict a trained token go through the LM
  head.

Both return ``[B, W]`` log-probabilities in the rows' own layout (``W`` the longest row, 0 where
nothing is trained), so the surrogate, the old and the reference log-probabilities do not care
which pass made them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from tracec.train.grpo import selective_log_softmax, token_logprobs

LossForward = Literal["shared", "rows"]
LOSS_FORWARDS: tuple[str, ...] = ("shared", "rows")

# one row of the loss: full token ids (prompt + completion), loss mask over them, advantage
Row = tuple[list[int], list[int], float]


@dataclass(frozen=True)
class Packed:
    """One micro-batch packed around its shared prompts (see the module doc)."""

    ids: list[int]
    positions: list[int]
    block: list[int]  # per packed token: index of its prompt block
    owner: list[int]  # per packed token: -1 in a prompt, else the row it belongs to
    keep: list[int]  # packed positions whose next token is trained (one per trained token)
    targets: list[int]  # the trained tokens, in ``keep`` order
    rows: list[int]  # per trained token: its row
    cols: list[int]  # per trained token: its column in the row's own layout


def first_trained(mask: list[int]) -> int:
    """The first trained position of a row (its length when nothing is trained)."""
    return mask.index(1) if 1 in mask else len(mask)


def shares_prefix(rows: list[Row]) -> bool:
    """True when two rows with trained tokens have the same context before their first one."""
    seen = set()
    for ids, mask, _ in rows:
        cut = first_trained(mask)
        if cut == len(mask) or cut == 0:
            continue
        key = tuple(ids[:cut])
        if key in seen:
            return True
        seen.add(key)
    return False


def pack_rows(rows: list[Row]) -> Packed:
    """Pack rows by their context before the first trained token; rows without a trained token
    are left out (they contribute nothing)."""
    blocks: dict[tuple[int, ...], list[int]] = {}
    for r, (ids, mask, _) in enumerate(rows):
        cut = first_trained(mask)
        if 0 < cut < len(mask):
            blocks.setdefault(tuple(ids[:cut]), []).append(r)
    p = Packed([], [], [], [], [], [], [], [])
    for b, (prefix, members) in enumerate(blocks.items()):
        base = len(p.ids)
        n = len(prefix)
        p.ids.extend(prefix)
        p.positions.extend(range(n))
        p.block.extend([b] * n)
        p.owner.extend([-1] * n)
        for r in members:
            ids, mask, _ = rows[r]
            start = len(p.ids)  # packed index of ids[n]; the row's ids[n:-1] are its inputs
            tail = ids[n:-1]
            p.ids.extend(tail)
            p.positions.extend(range(n, n + len(tail)))
            p.block.extend([b] * len(tail))
            p.owner.extend([r] * len(tail))
            for col in range(n, len(ids)):
                if mask[col]:  # token ids[col] is predicted at position col-1
                    p.keep.append(base + n - 1 if col == n else start + col - n - 1)
                    p.targets.append(ids[col])
                    p.rows.append(r)
                    p.cols.append(col)
    return p


def block_mask(p: Packed, device, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``[1, 1, L, L]`` attention mask: same prompt block, causal, and a completion token sees
    its prompt and its own row only. Boolean (True = attend) for sdpa; with ``dtype`` additive
    (0 / dtype's min) for eager attention."""
    block = torch.tensor(p.block, device=device)
    owner = torch.tensor(p.owner, device=device)
    n = block.numel()
    causal = torch.ones(n, n, dtype=torch.bool, device=device).tril()
    allowed = causal & (block[:, None] == block[None, :]) & (
        (owner[None, :] == -1) | (owner[None, :] == owner[:, None]))
    allowed = allowed[None, None]
    if dtype is None:
        return allowed
    return torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(
        ~allowed, torch.finfo(dtype).min)


def _attn_implementation(model) -> str:
    cfg = getattr(model, "config", None)
    if cfg is None and hasattr(model, "module"):
        cfg = model.module.config
    return str(getattr(cfg, "_attn_implementation", None) or "sdpa")


def shared_logprobs(model, rows: list[Row], device) -> torch.Tensor:
    """``[B, W]`` log-probabilities of the trained tokens, prompts computed once (module doc)."""
    width = max(len(r[0]) for r in rows)
    out = torch.zeros(len(rows), width, dtype=torch.float32, device=device)
    p = pack_rows(rows)
    if not p.keep:
        return out
    impl = _attn_implementation(model)
    params = next(iter(model.parameters()))
    mask = block_mask(p, device, None if impl == "sdpa" else params.dtype)
    res = model(input_ids=torch.tensor([p.ids], device=device), attention_mask=mask,
                position_ids=torch.tensor([p.positions], device=device), use_cache=False,
                logits_to_keep=torch.tensor(p.keep, device=device))
    logp = selective_log_softmax(res.logits, torch.tensor([p.targets], device=device))[0]
    index = (torch.tensor(p.rows, device=device), torch.tensor(p.cols, device=device))
    return out.index_put(index, logp)


def pad_rows(rows: list[Row], pad_id: int, device):
    """Right-padded ids, the batch's first trained position, the loss mask and advantages."""
    width = max(len(r[0]) for r in rows)
    ids = torch.tensor([r[0] + [pad_id] * (width - len(r[0])) for r in rows], device=device)
    start = min(first_trained(r[1]) for r in rows)
    mask = torch.tensor([r[1] + [0] * (width - len(r[1])) for r in rows], device=device,
                        dtype=torch.float32)
    advs = torch.tensor([r[2] for r in rows], device=device, dtype=torch.float32)
    # nothing trained (a DDP rank's zero-weighted idle row): still one position, so the loss
    # has a gradient graph and the rank joins the all-reduce
    return ids, min(start, width - 1), mask, advs


def loss_logprobs(model, rows: list[Row], pad_id: int, device, how: LossForward = "shared"
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(logp, mask, advantages)`` for a micro-batch, ``[B, W]``, ``[B, W]``, ``[B]``.

    ``shared`` packs rows around their shared prompts when at least two rows share one and the
    model's attention takes a custom mask (sdpa, eager); otherwise (and with ``rows``) each row is
    its own padded sequence."""
    ids, start, mask, advs = pad_rows(rows, pad_id, device)
    if how == "shared" and _attn_implementation(model) in ("sdpa", "eager") and shares_prefix(rows):
        return shared_logprobs(model, rows, device), mask, advs
    return token_logprobs(model, ids, None, start), mask, advs
