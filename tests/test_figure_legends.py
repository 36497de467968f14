"""Every figure the project writes reads at a glance: no legend covers a line or a bar of any of its axes.

Each figure is drawn from small synthetic data whose lines fill their axes (the case where matplotlib's
``loc="best"`` still lands on them), kept open instead of closed, and drawn with the Agg renderer: a
legend's box on the page must hold no point of a line (vertices and the segments between them, inside
their axes) and meet no bar.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.transforms import Bbox

from pearl_verl.dims import DIMENSIONS
from pearl_verl.eval import plots
from pearl_verl.stats import Estimate
from pearl_verl.train_local.heldout import OBSERVABLES
from pearl_verl.train_local.run_outputs import plot_curves

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "synthetic"))
import report as synthetic_report
from methods import METHODS

STEPS = 24
RNG = np.random.default_rng(0)


def _wave(low: float, high: float, phase: float) -> np.ndarray:
    """A curve over the steps that runs from ``low`` to ``high`` and back: series like it fill their axes."""
    x = np.linspace(0, 2 * np.pi, STEPS)
    return low + (high - low) * (0.5 + 0.5 * np.sin(x + phase))


def _main_job_rows() -> list[dict]:
    rows = []
    for step in range(1, STEPS + 1):
        i = step - 1
        row = {"step": step, "reward/mean": float(_wave(0.05, 0.95, 0)[i]),
               "pearl/episode/tutor_turns/mean": float(_wave(1, 8, 1)[i]),
               "pearl/episode/completed_rate": float(_wave(0, 1, 2)[i]),
               "actor/pg_loss": float(_wave(-0.5, 0.5, 3)[i])}
        row.update({f"pearl/reward/{dim}/mean": float(_wave(0.02, 0.98, k)[i]) for k, dim in enumerate(DIMENSIONS)})
        if step % 3 == 0:
            row["eval/reward/mean"] = float(_wave(0.1, 0.9, 4)[i])
            row.update({f"eval/obs/{name}": float(_wave(0, 1, k)[i]) for k, name in enumerate(OBSERVABLES)})
        rows.append(row)
    return rows


def _estimates(count: int, phase: float) -> list[Estimate]:
    means = 5 + 90 * (0.5 + 0.5 * np.sin(np.linspace(0, 2 * np.pi, count) + phase))
    return [Estimate(float(m), float(m) - 6, float(m) + 6, 40) for m in means]


def _synthetic_runs() -> dict[str, list[dict]]:
    steps = list(range(0, 200, 10))
    runs = {}
    for k, method in enumerate(METHODS):
        runs[method] = [{"steps": steps,
                         "dims": np.clip(RNG.uniform(0.05, 0.95, (len(steps), len(DIMENSIONS))) + 0.02 * k, 0, 1),
                         "turns": RNG.uniform(1, 12, len(steps)), "completion": RNG.uniform(0, 1, len(steps)),
                         "final_weights": RNG.uniform(0, 0.3, len(DIMENSIONS))} for _ in range(3)]
    return runs


def _summary() -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for k, method in enumerate(METHODS):
        dims = RNG.uniform(0.45 + 0.05 * k, 1.0, (3, len(DIMENSIONS)))
        out[method] = {"dims": dims, "avg": dims.mean(axis=1)}
    return out


FIGURES = {
    "train-local curves.png": lambda path: plot_curves(_main_job_rows(), path, "a run", OBSERVABLES),
    "eval radar": lambda path: plots.radar_plot(
        {"tutor a": [95, 90, 99, 85, 97, 92, 88, 96], "tutor b": [60, 99, 70, 98, 65, 97, 80, 99]},
        DIMENSIONS, "radar", path),
    "eval grouped bars": lambda path: plots.grouped_bars(
        {name: _estimates(len(DIMENSIONS), k) for k, name in enumerate(("tutor a", "tutor b", "tutor c"))},
        DIMENSIONS, "bars", "score", path),
    "eval line with intervals": lambda path: plots.line_with_ci(
        {name: _estimates(7, k) for k, name in enumerate(("pearl", "mathdial", "socraticlm"))},
        list(range(1, 8)), "success@k", "k", "%", path),
    "synthetic curves": lambda path: synthetic_report.plot_curves(_synthetic_runs(), path, "scenario"),
    "synthetic dimension curves": lambda path: synthetic_report.plot_dimension_curves(_synthetic_runs(), path,
                                                                                       "scenario"),
    "synthetic final scores": lambda path: synthetic_report.plot_final(_summary(), path, "scenario"),
    "synthetic weights": lambda path: synthetic_report.plot_weights(
        {"weights_complete_groups": {m: RNG.uniform(0, 0.3, len(DIMENSIONS)) for m in METHODS}},
        _synthetic_runs(), path, "scenario"),
}


@pytest.fixture
def kept_open(monkeypatch):
    """The figures the plotting code closes, kept open for the checks."""
    closed, close = [], plt.close
    monkeypatch.setattr(plt, "close", closed.append)
    yield closed
    for fig in closed:
        close(fig)


def _line_points(line) -> np.ndarray:
    """A line's vertices and 24 points along each segment between them, in display coordinates."""
    xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
    xy = xy[np.isfinite(xy).all(axis=1)]
    if line.get_linestyle() in ("None", "none", " ", "") or len(xy) < 2:
        return xy
    t = np.linspace(0, 1, 24)[:, None, None]
    return np.concatenate([xy, (xy[:-1] + t * (xy[1:] - xy[:-1])).reshape(-1, 2)])


def _shapes(ax):
    """``(kind, label, outline on the page, filled)`` of each bar, band and polygon of ``ax``."""
    for artist in [*ax.patches, *ax.collections]:
        filled = not isinstance(artist, LineCollection)
        paths = artist.get_paths() if hasattr(artist, "get_paths") else [artist.get_path()]
        for path in paths:
            yield type(artist).__name__, artist.get_label(), path.transformed(artist.get_transform()), filled


def covered(fig) -> list[str]:
    """What any legend of ``fig`` covers: ``legend covers KIND LABEL (AXES)`` for each line, bar or band it meets
    inside that band's axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    found = []
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            part = Bbox.intersection(box, ax.bbox)
            if part is None or part.width <= 0 or part.height <= 0:
                continue
            where = ax.get_title() or ax.get_label()
            for line in ax.get_lines():
                if any(part.contains(x, y) for x, y in _line_points(line)):
                    found.append(f"legend covers line {line.get_label()!r} ({where})")
            for kind, label, outline, filled in _shapes(ax):
                if outline.intersects_bbox(part, filled=filled):
                    found.append(f"legend covers {kind} {label!r} ({where})")
    return found


@pytest.mark.parametrize("name", list(FIGURES))
def test_no_legend_covers_a_line_or_a_bar(name, tmp_path, kept_open):
    path = tmp_path / "figure.png"
    FIGURES[name](path)
    assert path.stat().st_size > 0
    assert kept_open, "the figure was not closed (drawn elsewhere?)"
    problems = [p for fig in kept_open for p in covered(fig)]
    assert problems == [], f"{name}: {sorted(set(problems))[:6]}"


def test_the_check_sees_a_legend_on_a_line():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="rises")
    ax.plot([0, 1], [1, 0], label="falls")
    ax.legend(loc="center")
    assert covered(fig)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    assert covered(fig) == []
    plt.close(fig)
