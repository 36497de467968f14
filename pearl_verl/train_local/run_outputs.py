"""Training-run outputs a person reads: metrics JSONL (append-only, resumable), a PNG of the curves, and
each step's dialogues (``dialogues/step_NNNN.jsonl``, for ``pearl-verl view``)."""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pearl_verl.dims import DIMENSIONS
from pearl_verl.jsonl import json_line
from pearl_verl.write_whole import write_whole


def append_metrics(path: Path, metrics: dict[str, Any]) -> None:
    """Append one step's metrics as a JSON line (flushed, so a killed run loses nothing)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json_line(metrics, sort_keys=True))
        handle.flush()


def write_step_dialogues(out: Path, step: int, rows: Sequence[dict[str, Any]]) -> Path:
    """``out/dialogues/step_NNNN.jsonl``: one step's dialogues with judgement, shaped rewards and advantage.

    Rewritten whole (a resumed run repeats the step), so it never holds a half step; ``pearl-verl view``
    reads the folder.
    """
    path = out / "dialogues" / f"step_{step:04d}.jsonl"
    return write_whole(path, (json_line(row, sort_keys=True) for row in rows))


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """All steps logged so far (an empty list when the file does not exist)."""
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def plot_curves(rows: Sequence[dict[str, Any]], path: Path, title: str,
                observables: Mapping[str, str] | None = None) -> Path:
    """Reward (overall and per dimension), held-out tutor behaviour, turns and loss per step, as one PNG.

    ``observables``: the held-out behaviours to draw (``eval/obs/<name>`` rows) and what each measures
    (:data:`pearl_verl.train_local.heldout.OBSERVABLES`, passed in: heldout writes through this module).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pearl_verl.eval.plots import legend_beside

    train = [row for row in rows if "reward/mean" in row]
    steps = [row["step"] for row in train]
    evals = [row for row in rows if "eval/reward/mean" in row]
    fig, grid = plt.subplots(2, 2, figsize=(16, 8.5), layout="constrained")
    axes = grid.flat
    axes[0].plot(steps, [_get(row, "reward/mean") for row in train], color="black", linewidth=2.2, label="train: mean of 8 dims")
    axes[0].plot([row["step"] for row in evals], [_get(row, "eval/reward/mean") for row in evals], "D--", color="tab:green",
                 markersize=6, label="held-out eval")
    for dim in DIMENSIONS:
        axes[0].plot(steps, [_get(row, f"pearl/reward/{dim}/mean") for row in train], linewidth=1, alpha=0.6, label=dim)
    axes[0].set(title="judge reward", xlabel="step", ylabel="score in [0, 1]", ylim=(-0.02, 1.02))
    legend_beside(axes[0], fontsize=8)
    for name, text in (observables or {}).items():
        points = [(row["step"], 100 * row[f"eval/obs/{name}"]) for row in evals if f"eval/obs/{name}" in row]
        if points:
            axes[1].plot(*zip(*points), "o--", markersize=5, label=textwrap.fill(text, 48))
    axes[1].set(title="what the tutor does (held-out)", xlabel="step", ylabel="%", ylim=(-2, 102))
    if axes[1].get_lines():
        legend_beside(axes[1], fontsize=8)
    axes[2].plot(steps, [_get(row, "pearl/episode/tutor_turns/mean") for row in train], marker="o", markersize=3, label="tutor turns")
    axes[2].plot(steps, [_get(row, "pearl/episode/completed_rate") for row in train], marker="s", markersize=3,
                 label="completed and\ngated in (rate)")
    axes[2].set(title="dialogues (train)", xlabel="step")
    legend_beside(axes[2], fontsize=8)
    axes[3].plot(steps, [_get(row, "actor/pg_loss") for row in train], marker="o", markersize=3, color="tab:red")
    axes[3].set(title="GSPO policy loss", xlabel="step")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _get(row: dict[str, Any], key: str) -> float:
    value = row.get(key)
    return float(value) if isinstance(value, int | float) else math.nan
