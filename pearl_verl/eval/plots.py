"""PNG figures of the evaluations (matplotlib, Agg backend: no display needed).

Every figure has a title, labelled axes (0-100 scales where the tables use them), a legend when it
shows more than one series, outside the axes so that it covers no line or bar, and error bars for the
95% intervals the tables report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from pearl_verl.stats import Estimate

_DPI = 130


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def legend_beside(ax, **kwargs):
    """``ax``'s legend right of the axes, where none of their lines or bars runs (``loc="best"`` still covers
    lines that fill the axes); a ``layout="constrained"`` figure or ``tight_layout`` makes room for it."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    _pyplot().close(fig)
    return path


def radar_plot(series: Mapping[str, Sequence[float]], axes: Sequence[str], title: str, path: Path) -> Path:
    """One closed polygon per series over ``axes`` (values on 0-100).

    Args:
        series: label -> one value per axis.
        axes: axis titles (e.g. the 8 dimensions).
        title: figure title.
        path: PNG to write.
    """
    plt = _pyplot()
    angles = [2 * math.pi * i / len(axes) for i in range(len(axes))]
    fig, ax = plt.subplots(figsize=(6.4, 6.4), subplot_kw={"projection": "polar"})
    for label, values in series.items():
        ax.plot([*angles, angles[0]], [*values, values[0]], marker="o", linewidth=1.6, label=label)
        ax.fill([*angles, angles[0]], [*values, values[0]], alpha=0.08)
    ax.set_xticks(angles)
    ax.set_xticklabels(list(axes), fontsize=10)
    ax.set_ylim(0, 100)
    ax.set_yticks([20, 40, 60, 80, 100])
    ax.set_yticklabels(["20", "40", "60", "80", "100"], fontsize=8)
    ax.set_title(title, fontsize=12, pad=18)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, fontsize=9, frameon=False)  # below the labels
    return _save(fig, path)


def grouped_bars(
    series: Mapping[str, Sequence[Estimate]],
    categories: Sequence[str],
    title: str,
    ylabel: str,
    path: Path,
    ylim: tuple[float, float] | None = (0, 100),
) -> Path:
    """Bars per category, one colour per series, with the estimates' intervals as error bars."""
    plt = _pyplot()
    count = max(1, len(series))
    width = 0.8 / count
    fig, ax = plt.subplots(figsize=(max(6.4, 1.1 * len(categories) * max(1, count / 2)), 4.6))
    low_cap, high_cap = ylim if ylim is not None else (-math.inf, math.inf)
    for index, (label, estimates) in enumerate(series.items()):
        xs = [c + (index - (count - 1) / 2) * width for c in range(len(categories))]
        means = [e.mean for e in estimates]
        # Intervals of bounded scores can pass the bounds; the bars show them clipped to the axis.
        errors = [
            [e.mean - max(e.low, low_cap) for e in estimates],
            [min(e.high, high_cap) - e.mean for e in estimates],
        ]
        ax.bar(xs, means, width=width, yerr=errors, capsize=3, label=label)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(list(categories), fontsize=9)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ylim is not None:
        ax.set_ylim(ylim[0], ylim[1] * 1.04)
    ax.grid(axis="y", alpha=0.3)
    if count > 1:
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=min(count, 4), frameon=False)
    return _save(fig, path)


def line_with_ci(
    series: Mapping[str, Sequence[Estimate]],
    xs: Sequence[str | int],
    title: str,
    xlabel: str,
    ylabel: str,
    path: Path,
) -> Path:
    """Lines over ``xs`` with shaded intervals (controllability curves, success@k curves)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    positions = list(range(len(xs)))
    for label, estimates in series.items():
        ax.plot(positions, [e.mean for e in estimates], marker="o", label=label)
        lows = [max(e.low, 0.0) for e in estimates]
        ax.fill_between(positions, lows, [min(e.high, 100.0) for e in estimates], alpha=0.15)
    ax.set_xticks(positions)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 104)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    legend_beside(ax, fontsize=9)
    return _save(fig, path)
