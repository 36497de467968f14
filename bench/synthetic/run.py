"""The synthetic multi-objective experiment (issue 8, item 3): five advantage estimators, several seeds.

    python bench/synthetic/run.py                      # the committed report (about 5 minutes on 2 cores)
    python bench/synthetic/run.py --quick --out /tmp/x # a smoke run in seconds

Trains the tabular tutoring policy of :mod:`train` in the environment of :mod:`env` with each
estimator of :mod:`methods`, for every seed and scenario, and writes ``results.json``,
``report.md`` and the PNG plots to ``--out``. Scenarios: ``main`` (the judge misreads each
criterion by one point 10% of the time); ``no_noise`` (a perfect judge), which separates what the
estimators do with signal from what they do with judge noise; ``lenient_gate`` (a perfect judge
that also passes the completion gate after an unwarranted reveal of the answer), which probes
what the turn penalty does when the shortest completed dialogue is a bad one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import multiprocessing as mp
import os
import platform
import sys
import time
import warnings
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import torch  # noqa: E402
from env import DIMS, EnvConfig, rollout  # noqa: E402
from methods import METHODS, advantages  # noqa: E402
from report import write_report  # noqa: E402
from train import TrainConfig, conditions, dimension_statistics, effective_weights, initial_logits, train  # noqa: E402

SCENARIOS: dict[str, EnvConfig] = {
    "main": EnvConfig(),
    "no_noise": EnvConfig(judge_noise=0.0),
    "lenient_gate": EnvConfig(judge_noise=0.0, lenient_gate=True),
}
DEFAULT_OUT = HERE.parents[1] / "docs" / "experiments" / "synthetic_multiobjective"


def _quiet() -> None:
    torch.set_num_threads(1)  # tensors of a few hundred entries: threads only add overhead
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)  # verl's import warns about missing accelerators


def _job(args: tuple[str, str, int, dict[str, Any]]) -> tuple[str, str, int, dict[str, Any]]:
    scenario, method, seed, settings = args
    _quiet()
    config = TrainConfig(method=method, seed=seed, env=SCENARIOS[scenario], **settings)
    return scenario, method, seed, dataclasses.asdict(train(config))


def initial_diagnostics(env: EnvConfig, settings: dict[str, Any], seed: int = 12_345) -> dict[str, Any]:
    """Dimension statistics and each estimator's effective weights under the cold-start policy.

    Reported over all groups and over the groups whose members all pass the completion gate (there
    the gate, shared by every dimension, no longer masks their own variance).
    """
    gen = torch.Generator().manual_seed(seed)
    groups, size = settings["eval_groups"], settings["group_size"]
    ability, misconception, index = conditions(groups, size, env, gen)
    batch = rollout(initial_logits(), ability, misconception, env, gen)
    idx = index.numpy()
    per_method = {m: advantages(m, batch.scores, batch.turns, batch.completed, idx) for m in METHODS}
    complete = batch.scores[:, DIMS.index("complete")] > 0
    full = complete.view(groups, size).all(dim=1).repeat_interleave(size)
    return {
        "groups": groups,
        "groups_all_complete": int(full.sum()) // size,
        "statistics": dimension_statistics(batch.scores, idx),
        "statistics_complete_groups": dimension_statistics(batch.scores[full], idx[full.numpy()]),
        "weights": effective_weights(per_method, batch.scores, idx),
        "weights_complete_groups": effective_weights(
            {m: a[full] for m, a in per_method.items()}, batch.scores[full], idx[full.numpy()]
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of {list(SCENARIOS)}")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 30 steps, small batches (smoke test)")
    args = parser.parse_args()
    _quiet()
    scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; choose from {list(SCENARIOS)}")
    seeds, settings = args.seeds, {"steps": args.steps}
    if args.quick:
        seeds, settings = 2, {"steps": 30, "groups": 16, "eval_every": 10, "eval_groups": 32}
    full_settings = {**dataclasses.asdict(TrainConfig(method="pearl", seed=0)), **settings}
    full_settings.pop("method"), full_settings.pop("seed"), full_settings.pop("env")
    start = time.perf_counter()
    jobs = [(s, m, seed, settings) for s in scenarios for seed in range(seeds) for m in METHODS]
    with mp.get_context("spawn").Pool(max(1, min(args.workers, len(jobs)))) as pool:
        finished = pool.map(_job, jobs)
    results: dict[str, Any] = {
        "command": "python bench/synthetic/run.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"torch {torch.__version__}",
        "date": date.today().isoformat(),
        "seeds": list(range(seeds)),
        "settings": full_settings,
        "scenarios": {},
    }
    for scenario in scenarios:
        runs = {m: [r for s, mm, _, r in sorted(finished, key=lambda x: x[2]) if s == scenario and mm == m]
                for m in METHODS}
        results["scenarios"][scenario] = {
            "env": dataclasses.asdict(SCENARIOS[scenario]),
            "initial": initial_diagnostics(SCENARIOS[scenario], full_settings),
            "runs": runs,
        }
    results["seconds"] = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    write_report(results, args.out)
    print(f"wrote {args.out}/report.md, results.json and plots in {results['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
