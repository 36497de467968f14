"""What fixed eval seeds buy train-local's held-out comparison: the paired interval against an unpaired one.

    python bench/heldout_pairing.py RUN_DIR [RUN_DIR ...]

train-local evaluates the policy where RL starts and at the last step on the same held-out problems,
students and sampling seeds, and reports the paired change (the mean of per-dialogue differences with its
Student-t 95% interval). verl's validation samples each evaluation afresh, so its two evaluations could only
be compared unpaired (Welch's interval on the two sets of dialogue rewards). For each run this prints both
half-widths from the run's own ``heldout.jsonl``: the ratio is how much wider the interval of the same
change would be without the pairing.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path


def welch_half_width(a: list[float], b: list[float], confidence: float = 0.95) -> float:
    """Half-width of Welch's interval for mean(b) - mean(a)."""
    from pearl_verl.stats import t_quantile

    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return t_quantile(0.5 + confidence / 2, max(1, int(dof))) * math.sqrt(va + vb)  # floor: the wider side


def main(runs: list[str]) -> int:
    from pearl_verl.stats import mean_ci
    from pearl_verl.train_local.heldout import read_heldout

    print("| run | step 0 -> last | change | paired half-width | unpaired (Welch) half-width | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for run in runs:
        evaluations = read_heldout(Path(run) / "heldout.jsonl")
        first, last = evaluations[0][1], evaluations[-1][1]
        pairs = [(a, b) for a, b in zip(first.rewards, last.rewards) if a is not None and b is not None]
        paired = mean_ci([b - a for a, b in pairs])
        unpaired = welch_half_width([a for a, _ in pairs], [b for _, b in pairs])
        half = (paired.high - paired.low) / 2
        print(f"| {run} | {first.step} -> {last.step} | {paired.mean:+.3f} | {half:.3f} | {unpaired:.3f} | "
              f"{unpaired / half:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
