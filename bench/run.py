"""Run pearl_verl's benchmarks and print ratios measured in the same run.

    python bench/run.py            full mode: more repeats, numbers for BENCHMARKS.md
    python bench/run.py --quick    CI smoke: fewer repeats, same sizes and targets

Exits 1 when a ratio misses its target, so a regression fails CI.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_advantage  # noqa: E402

BATCH = 65_536


@dataclass(frozen=True)
class Ratio:
    """A measured ratio, its target and whether it met it.

    ``gates_quick``: whether ``--quick`` (CI) fails on a miss; scaling ratios are too noisy for
    five repeats on a shared 2-core runner and gate only full runs.
    """

    name: str
    value: float
    target: float
    gates_quick: bool = True

    @property
    def ok(self) -> bool:
        return self.value <= self.target


def advantage_ratios(repeats: int) -> tuple[list[bench_advantage.Timing], list[Ratio]]:
    """Estimator vs verl GRPO at 64k trajectories, and scaling from 64k to 128k (medians)."""
    timings = bench_advantage.run([BATCH, 2 * BATCH], repeats)
    t = {(x.name, x.batch): x.median_ms for x in timings}
    grpo, core, plugin = bench_advantage.GRPO, bench_advantage.CORE, bench_advantage.PLUGIN
    ratios = [
        Ratio(f"{core} / {grpo} @64k", t[core, BATCH] / t[grpo, BATCH], 3.0),
        Ratio(f"{plugin} / {grpo} @64k", t[plugin, BATCH] / t[grpo, BATCH], 3.0),
        Ratio(f"{core}: time(128k) / time(64k)", t[core, 2 * BATCH] / t[core, BATCH], 2.3, gates_quick=False),
        Ratio(f"{grpo}: time(128k) / time(64k)", t[grpo, 2 * BATCH] / t[grpo, BATCH], math.inf, gates_quick=False),
    ]
    return timings, ratios


def machine() -> str:
    import torch

    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), {date.today().isoformat()}"
    )


def markdown(timings: list[bench_advantage.Timing], ratios: list[Ratio]) -> str:
    lines = [f"Machine: {machine()}", "", "| call | batch | median ms | min ms |", "|---|---:|---:|---:|"]
    lines += [f"| {x.name} | {x.batch:,} | {x.median_ms:.1f} | {x.min_ms:.1f} |" for x in timings]
    lines += ["", "| ratio | measured | target | met |", "|---|---:|---:|:-:|"]
    lines += [
        f"| {r.name} | {r.value:.2f} | {'(reference)' if math.isinf(r.target) else f'<= {r.target}'} | "
        f"{'yes' if r.ok else 'NO'} |"
        for r in ratios
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (CI smoke)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args()
    timings, ratios = advantage_ratios(repeats=5 if args.quick else 30)
    print(markdown(timings, ratios))
    if args.json:
        args.json.write_text(
            json.dumps(
                {"machine": machine(), "timings": [asdict(x) for x in timings],
                 "ratios": [asdict(r) | {"ok": r.ok} for r in ratios]},
                indent=2,
            )
        )
    gating = [r for r in ratios if r.gates_quick or not args.quick]
    missed = [r.name for r in gating if not r.ok]
    if missed:
        print(f"\nMISSED TARGET: {missed}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
