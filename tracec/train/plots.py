"""Training curves from a run dir's ``metrics.jsonl`` (matplotlib, Agg backend)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tracec import files

SFT_METRICS = "sft_metrics.jsonl"


class NoMetrics(FileNotFoundError):
    """The run dir has no metrics to plot."""


# the numbers the report reads from each line: (required, optional)
STEP_NUMBERS = (("step", "reward_mean"), ("reward_std", "success_rate", "kept_share", "episodes"))
SFT_NUMBERS = (("sft_loss",), ("sft_step", "sft_token_accuracy"))


def _row(row: object, numbers: tuple[tuple[str, ...], tuple[str, ...]]) -> dict:
    """A metrics line whose plotted fields are finite numbers, else a ValueError naming one."""
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    required, optional = numbers
    for key in required + optional:
        if key not in row and key in optional:
            continue
        value = row.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            shown = "missing" if key not in row else f"{json.dumps(value)[:40]}"
            raise ValueError(f"`{key}` is {shown}, expected a finite number")
    return row


def read_metrics(run_dir: str | Path, name: str = "metrics.jsonl") -> list[dict]:
    """The JSONL metrics of a run, one dict per optimiser step (``name``: ``sft_metrics.jsonl``
    for the SFT warm start)."""
    path = Path(run_dir) / name
    if not path.exists():
        raise NoMetrics(f"no {name} in {run_dir} (is it a `tracec train` output dir?)")
    try:
        text = files.read_text(path, "metrics file", limit=files.RESULTS_BYTES)
    except files.InputError as exc:
        raise NoMetrics(str(exc)) from None
    rows = []
    numbers = SFT_NUMBERS if name == SFT_METRICS else STEP_NUMBERS
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(_row(json.loads(line), numbers))
        except json.JSONDecodeError as exc:
            raise NoMetrics(f"{path}:{n}: not JSON ({exc.msg})") from None
        except ValueError as exc:
            raise NoMetrics(f"{path}:{n}: {exc} (edited by hand? tracec writes numbers there)") from None
    if not rows:
        raise NoMetrics(f"{path} is empty")
    return rows


def _optional(run_dir: str | Path, name: str) -> list[dict]:
    try:
        return read_metrics(run_dir, name)
    except NoMetrics:
        if (Path(run_dir) / name).exists():
            raise
        return []


def report_training(run_dir: str | Path, out: str | Path | None = None) -> dict:
    """Draw the SFT warm start (loss, token accuracy) and GRPO (reward mean ± std, success rate,
    kept-group share) curves of a ``tracec train`` run; returns a summary dict."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _optional(run_dir, "metrics.jsonl")
    sft = _optional(run_dir, SFT_METRICS)
    if not rows and not sft:
        raise NoMetrics(f"no metrics.jsonl or {SFT_METRICS} in {run_dir} (is it a `tracec train` "
                        "output dir?)")
    png = Path(out) if out else Path(run_dir) / "training_curves.png"
    panels = (1 if sft else 0) + (2 if rows else 0)
    fig, axes = plt.subplots(panels, 1, figsize=(7, 3 * panels), squeeze=False)
    axes = list(axes[:, 0])
    summary: dict = {"run_dir": str(run_dir), "png": str(png), "steps": len(rows),
                     "sft_steps": len(sft)}
    if sft:
        ax = axes.pop(0)
        sft_steps = [r.get("sft_step", i + 1) for i, r in enumerate(sft)]
        ax.plot(sft_steps, [r["sft_loss"] for r in sft], marker="o", label="SFT loss (per token)")
        ax.set_ylabel("loss")
        ax.set_xlabel("SFT step")
        ax.set_title(f"SFT warm start on oracle demos: {Path(run_dir).name}")
        twin = ax.twinx()
        twin.plot(sft_steps, [r.get("sft_token_accuracy", 0.0) for r in sft], marker=".",
                  color="tab:orange", label="token accuracy")
        twin.set_ylim(-0.05, 1.05)
        twin.set_ylabel("token accuracy")
        lines = ax.get_legend_handles_labels()
        more = twin.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], loc="best")
        summary.update(sft_loss_first=sft[0]["sft_loss"], sft_loss_last=sft[-1]["sft_loss"])
    if rows:
        ax1, ax2 = axes
        steps = [r["step"] for r in rows]
        mean = [r["reward_mean"] for r in rows]
        std = [r.get("reward_std", 0.0) for r in rows]
        ax1.plot(steps, mean, marker="o", label="reward mean")
        ax1.fill_between(steps, [m - s for m, s in zip(mean, std)],
                         [m + s for m, s in zip(mean, std)], alpha=0.2, label="± std")
        ax1.plot(steps, [r.get("success_rate", 0.0) for r in rows], marker=".",
                 label="success rate")
        ax1.set_ylabel("reward")
        ax1.legend(loc="best")
        ax1.set_title(f"GRPO training: {Path(run_dir).name}")
        ax2.plot(steps, [r.get("kept_share", 0.0) for r in rows], marker="o", color="tab:green",
                 label="kept-group share")
        ax2.set_ylim(-0.05, 1.05)
        ax2.set_xlabel("step")
        ax2.set_ylabel("share of groups kept")
        ax2.legend(loc="best")
        summary.update(reward_first=mean[0], reward_last=mean[-1],
                       kept_share_mean=sum(r.get("kept_share", 0.0) for r in rows) / len(rows))
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return summary
