"""Human-facing output of the analysis: a rich table and the coverage plot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tracec.analysis.aggregate import Selection

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def selection_table(entries: list[Selection], title: str = "Capabilities") -> Table:
    from rich.table import Table

    table = Table(title=title)
    for col, justify in (("capability", "left"), ("Cov", "right"), ("Δ", "right"),
                         ("runs passed", "right"), ("selected", "center"),
                         ("example failures", "left")):
        table.add_column(col, justify=justify, no_wrap=col == "capability")
    for e in entries:
        table.add_row(
            e.skill,
            f"{e.mean_cov:.3f} ± {e.std_cov:.3f}",
            f"{e.mean_delta:.3f} ± {e.std_delta:.3f}",
            f"{e.n_runs_passed}/{e.n_runs_total}",
            "yes" if e.passes_consistency else "no",
            ", ".join(e.example_failed_cases[:4]) + (" …" if len(e.example_failed_cases) > 4 else ""),
        )
    return table


def print_selection(entries: list[Selection], console: Console | None = None) -> None:
    from rich.console import Console

    (console or Console()).print(selection_table(entries))


def coverage_plot(entries: list[Selection], total_failed: int, path: Path) -> Path:
    """Bar chart of failed trajectories lacking each capability (mean over runs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [e.skill for e in entries][::-1]
    counts = [e.mean_cov * total_failed for e in entries][::-1]
    errs = [e.std_cov * total_failed for e in entries][::-1]
    colors = ["tab:blue" if e.passes_consistency else "tab:gray" for e in entries][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(names) + 1.5))
    ax.barh(names, counts, xerr=errs, color=colors)
    ax.set_xlabel(f"failed trajectories lacking the capability (of {total_failed})")
    ax.set_title("Failure coverage per capability (blue: selected)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
