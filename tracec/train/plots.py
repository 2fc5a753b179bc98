"""Training curves from a run dir's ``metrics.jsonl`` (matplotlib, Agg backend)."""

from __future__ import annotations

import json
from pathlib import Path


class NoMetrics(FileNotFoundError):
    """The run dir has no metrics to plot."""


def read_metrics(run_dir: str | Path) -> list[dict]:
    """The JSONL metrics of a run, one dict per optimiser step."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        raise NoMetrics(f"no metrics.jsonl in {run_dir} (is it a `tracec train` output dir?)")
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise NoMetrics(f"{path}:{n}: not JSON ({exc.msg})") from None
    if not rows:
        raise NoMetrics(f"{path} is empty")
    return rows


def report_training(run_dir: str | Path, out: str | Path | None = None) -> dict:
    """Draw reward (mean ± std, success rate) and kept-group curves; returns a summary dict."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(run_dir)
    png = Path(out) if out else Path(run_dir) / "training_curves.png"
    steps = [r["step"] for r in rows]
    mean = [r["reward_mean"] for r in rows]
    std = [r.get("reward_std", 0.0) for r in rows]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    ax1.plot(steps, mean, marker="o", label="reward mean")
    ax1.fill_between(steps, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                     alpha=0.2, label="± std")
    ax1.plot(steps, [r.get("success_rate", 0.0) for r in rows], marker=".", label="success rate")
    ax1.set_ylabel("reward")
    ax1.legend(loc="best")
    ax1.set_title(f"GRPO training: {Path(run_dir).name}")
    ax2.plot(steps, [r.get("kept_share", 0.0) for r in rows], marker="o", color="tab:green",
             label="kept-group share")
    ax2.set_ylim(-0.05, 1.05)
    ax2.set_xlabel("step")
    ax2.set_ylabel("share of groups kept")
    ax2.legend(loc="best")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return {"run_dir": str(run_dir), "png": str(png), "steps": len(rows),
            "reward_first": mean[0], "reward_last": mean[-1],
            "kept_share_mean": sum(r.get("kept_share", 0.0) for r in rows) / len(rows)}
