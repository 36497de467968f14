"""Tables, paired comparisons and plots of the synthetic experiment (``report.md`` and PNGs)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from env import ACTIONS, CRITERIA, DIMS  # noqa: E402
from methods import LABELS, METHODS  # noqa: E402

LAST_EVALS = 3  # final numbers average the last evaluations of each run (less evaluation noise)
COLORS = {
    "grpo_mean": "#7f7f7f", "gdpo": "#9467bd", "pearl_raw": "#1f77b4", "pearl": "#2ca02c", "pearl_turn": "#d62728",
}  # fmt: skip


def final(run: dict[str, Any], key: str) -> np.ndarray:
    """A run's ``key`` (dims, turns, completion, actions) averaged over its last evaluations."""
    return np.asarray(run[key][-LAST_EVALS:], dtype=float).mean(axis=0)


def per_seed(runs: Sequence[dict[str, Any]], key: str) -> np.ndarray:
    """(seeds, ...) final values of every seed's run."""
    return np.stack([final(run, key) for run in runs])


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, np.ndarray]]:
    """Per method: per-seed final dims (seeds, 8), average score, turns, completion, behaviour shares."""
    out = {}
    for method in METHODS:
        dims = per_seed(runs[method], "dims")
        out[method] = {
            "dims": dims,
            "avg": dims.mean(axis=1),
            "turns": per_seed(runs[method], "turns"),
            "completion": per_seed(runs[method], "completion"),
            "actions": per_seed(runs[method], "actions"),
            "initial": np.asarray(runs[method][0]["dims"][0]),
            "initial_turns": runs[method][0]["turns"][0],
        }
    return out


def _ms(values: np.ndarray, digits: int = 3) -> str:
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.{digits}f} ± {sd:.{digits}f}"


def paired(a: np.ndarray, b: np.ndarray, digits: int = 3) -> str:
    """Mean of ``a - b`` over seeds, its sd, and how many seeds have a positive difference."""
    diff = a - b
    sd = diff.std(ddof=1) if len(diff) > 1 else 0.0
    return f"{diff.mean():+.{digits}f} ± {sd:.{digits}f} ({int((diff > 0).sum())}/{len(diff)})"


def outcome_table(summary: dict[str, dict[str, np.ndarray]]) -> list[str]:
    header = "| method | " + " | ".join(DIMS) + " | avg | turns | gate passed |"
    rows = [header, "|---|" + "---:|" * (len(DIMS) + 3)]
    first = summary[METHODS[0]]
    rows.append(
        "| initial policy | " + " | ".join(f"{v:.3f}" for v in first["initial"])
        + f" | {first['initial'].mean():.3f} | {first['initial_turns']:.2f} | |"
    )
    for method in METHODS:
        s = summary[method]
        cells = [_ms(s["dims"][:, k], 3) for k in range(len(DIMS))]
        rows.append(f"| {LABELS[method]} | " + " | ".join(cells)
                    + f" | {_ms(s['avg'])} | {_ms(s['turns'], 2)} | {_ms(s['completion'])} |")
    return rows


COMPARISONS: tuple[tuple[str, str, str], ...] = (
    ("pearl_raw", "grpo_mean", "(c) - (a): per-dimension normalisation vs mean reward"),
    ("gdpo", "pearl_raw", "(b) - (c): GDPO (sum + batch whitening) vs PEARL's mean"),
    ("pearl", "pearl_raw", "(d) - (c): discretisation"),
    ("pearl", "grpo_mean", "(d) - (a): PEARL vs mean reward"),
    ("pearl_turn", "pearl", "(e) - (d): turn penalty"),
)


def comparison_table(summary: dict[str, dict[str, np.ndarray]]) -> list[str]:
    rows = ["| comparison | " + " | ".join(DIMS) + " | avg | turns |", "|---|" + "---:|" * (len(DIMS) + 2)]
    for a, b, name in COMPARISONS:
        cells = [paired(summary[a]["dims"][:, k], summary[b]["dims"][:, k]) for k in range(len(DIMS))]
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {paired(summary[a]['avg'], summary[b]['avg'])} | "
                    f"{paired(summary[a]['turns'], summary[b]['turns'], 2)} |")
    return rows


def statistics_table(initial: dict[str, Any]) -> list[str]:
    rows = ["| dimension | mean | within-group sd | groups where it varies | ... after discretisation |"
            " within-group sd, all-complete groups | varies there | ... after discretisation |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    s, c = initial["statistics"], initial["statistics_complete_groups"]
    for k, dim in enumerate(DIMS):
        rows.append(f"| {dim} | {s['mean'][k]:.3f} | {s['within_group_std'][k]:.3f} | {s['groups_varying'][k]:.2f} | "
                    f"{s['groups_varying_discretised'][k]:.2f} | {c['within_group_std'][k]:.3f} | "
                    f"{c['groups_varying'][k]:.2f} | {c['groups_varying_discretised'][k]:.2f} |")
    return rows


def weights_table(weights: dict[str, list[float]]) -> list[str]:
    rows = ["| method | " + " | ".join(DIMS) + " |", "|---|" + "---:|" * len(DIMS)]
    rows += [f"| {LABELS[m]} | " + " | ".join(f"{v:.2f}" for v in weights[m]) + " |" for m in METHODS]
    return rows


def actions_table(summary: dict[str, dict[str, np.ndarray]]) -> list[str]:
    rows = ["| method | " + " | ".join(ACTIONS) + " |", "|---|" + "---:|" * len(ACTIONS)]
    for method in METHODS:
        shares = summary[method]["actions"].mean(axis=0)
        rows.append(f"| {LABELS[method]} | " + " | ".join(f"{v:.2f}" for v in shares) + " |")
    return rows


def criteria_table(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each criterion's gated score at the last evaluation (mean over seeds), per method."""
    rows = ["| criterion | " + " | ".join(LABELS[m][:3] for m in METHODS) + " |", "|---|" + "---:|" * len(METHODS)]
    for dim in DIMS:
        for name in CRITERIA[dim]:
            values = [np.mean([r["criteria"][name] for r in runs[m]]) for m in METHODS]
            rows.append(f"| {dim}.{name} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    return rows


def _methods_legend(fig, ax) -> None:
    """One legend of the methods (``ax``'s series), below every panel of ``fig`` (a ``layout="constrained"``
    figure), where it covers none of their lines or bars."""
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=len(METHODS), fontsize=8)


def plot_curves(runs: dict[str, list[dict[str, Any]]], path: Path, title: str) -> None:
    """Average score, turns and gate rate over training (mean over seeds, band = min..max)."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), layout="constrained")
    for method in METHODS:
        steps = np.asarray(runs[method][0]["steps"])
        series = {
            "average of the 8 dimensions": np.stack([np.asarray(r["dims"]).mean(axis=1) for r in runs[method]]),
            "tutor turns": np.stack([np.asarray(r["turns"]) for r in runs[method]]),
            "completion gate passed": np.stack([np.asarray(r["completion"]) for r in runs[method]]),
        }
        for ax, (name, values) in zip(axes, series.items(), strict=True):
            ax.plot(steps, values.mean(axis=0), color=COLORS[method], label=LABELS[method])
            ax.fill_between(steps, values.min(axis=0), values.max(axis=0), color=COLORS[method], alpha=0.15)
            ax.set_title(name)
            ax.set_xlabel("policy update")
    _methods_legend(fig, axes[0])
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_dimension_curves(runs: dict[str, list[dict[str, Any]]], path: Path, title: str) -> None:
    fig, axes = plt.subplots(2, 4, figsize=(16, 7.4), sharex=True, layout="constrained")
    for k, ax in enumerate(axes.flat):
        for method in METHODS:
            steps = np.asarray(runs[method][0]["steps"])
            values = np.stack([np.asarray(r["dims"])[:, k] for r in runs[method]])
            ax.plot(steps, values.mean(axis=0), color=COLORS[method], label=LABELS[method])
        ax.set_title(DIMS[k])
    _methods_legend(fig, axes.flat[0])
    fig.suptitle(title + " (mean over seeds)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_final(summary: dict[str, dict[str, np.ndarray]], path: Path, title: str) -> None:
    """Final per-dimension scores per method, bars = mean over seeds, whiskers = sd."""
    fig, ax = plt.subplots(figsize=(14, 4.9), layout="constrained")
    width = 0.8 / len(METHODS)
    x = np.arange(len(DIMS) + 1)
    for i, method in enumerate(METHODS):
        values = np.column_stack([summary[method]["dims"], summary[method]["avg"]])
        ax.bar(x + (i - 2) * width, values.mean(axis=0), width, yerr=values.std(axis=0, ddof=1),
               color=COLORS[method], label=LABELS[method], capsize=2)
    ax.set_xticks(x, [*DIMS, "avg"])
    ax.set_ylim(0.4, 1.02)
    ax.set_ylabel("noise-free judge score after training")
    _methods_legend(fig, ax)
    ax.set_title(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_weights(initial: dict[str, Any], runs: dict[str, list[dict[str, Any]]], path: Path, title: str) -> None:
    """Heatmaps: how much each dimension moves each estimator's advantage, at the start and at the end."""
    start = np.asarray([initial["weights_complete_groups"][m] for m in METHODS])
    end = np.asarray([np.mean([r["final_weights"] for r in runs[m]], axis=0) for m in METHODS])
    fig, axes = plt.subplots(1, 2, figsize=(15, 3.8))
    for ax, data, name in zip(axes, (start, end), ("cold-start policy, all-complete groups", "final policy"),
                              strict=True):
        image = ax.imshow(data, cmap="viridis", vmin=min(0.0, float(data.min())), vmax=max(0.35, float(data.max())))
        ax.set_xticks(range(len(DIMS)), DIMS)
        ax.set_yticks(range(len(METHODS)), [LABELS[m] for m in METHODS])
        for (i, j), value in np.ndenumerate(data):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="w" if value < 0.2 else "k", fontsize=8)
        ax.set_title(name)
        fig.colorbar(image, ax=ax, fraction=0.025)
    fig.suptitle(title + ": effective weight of each dimension in each estimator's advantage")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(results: dict[str, Any], out: Path) -> None:
    """``report.md`` and the PNGs of every scenario into ``out``."""
    settings = results["settings"]
    lines = [
        "# Synthetic multi-objective experiment: generated results",
        "",
        f"Regenerate: `{results['command'].strip()}` ({results['seconds'] / 60:.1f} min on {results['machine']}, "
        f"{results['date']}). Seeds {results['seeds']}; {settings['steps']} updates of "
        f"{settings['groups']} groups x {settings['group_size']} episodes; Adam, lr {settings['lr']}; each run's "
        f"final numbers average its last {LAST_EVALS} evaluations ({settings['eval_groups'] * settings['group_size']}"
        " episodes each, noise-free judge). Tables give mean ± sd over seeds; paired differences give mean ± sd of "
        "the per-seed difference and (in brackets) the number of seeds where it is positive. The discussion is in "
        "[README.md](README.md).",
    ]
    for name, scenario in results["scenarios"].items():
        summary, runs, initial = summarize(scenario["runs"]), scenario["runs"], scenario["initial"]
        env = ", ".join(f"{k}={v}" for k, v in scenario["env"].items())
        prefix = f"{name}_"
        plot_curves(runs, out / f"{prefix}curves.png", f"scenario {name}")
        plot_dimension_curves(runs, out / f"{prefix}dimension_curves.png", f"scenario {name}")
        plot_final(summary, out / f"{prefix}final_dimensions.png", f"scenario {name}: final scores")
        plot_weights(initial, runs, out / f"{prefix}weights.png", f"scenario {name}")
        lines += [
            "", f"## Scenario `{name}` ({env})", "",
            "### Dimension statistics under the cold-start policy", "",
            f"{initial['groups']} groups, of which {initial['groups_all_complete']} have every member pass the "
            f"completion gate (as this scenario's judge scores them, judge_noise={scenario['env']['judge_noise']}).", "", *statistics_table(initial), "",
            "### Effective weight of each dimension in each estimator", "",
            "Least-squares coefficients of the advantage on the dimensions' within-group z-scores, normalised "
            "so their absolute values sum to 1 (uniform = 0.125). Cold-start policy, all-complete groups:", "",
            *weights_table(initial["weights_complete_groups"]), "", "Cold-start policy, all groups:", "",
            *weights_table(initial["weights"]), "", "Each method's final policy (mean over seeds):", "",
            *weights_table({m: list(np.mean([r["final_weights"] for r in runs[m]], axis=0)) for m in METHODS}), "",
            f"![effective weights]({prefix}weights.png)", "",
            "### Final scores", "", *outcome_table(summary), "", f"![final scores]({prefix}final_dimensions.png)", "",
            "### Paired differences (same seeds)", "", *comparison_table(summary), "",
            "### Behaviour mix of the final policies (share of turns)", "", *actions_table(summary), "",
            "### Criterion scores of the final policies (gated, in [0, 1], mean over seeds, last evaluation)", "",
            *criteria_table(runs), "",
            "### Training curves", "", f"![curves]({prefix}curves.png)", "",
            f"![dimension curves]({prefix}dimension_curves.png)",
        ]  # fmt: skip
    (out / "report.md").write_text("\n".join(lines) + "\n")
