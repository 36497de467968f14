"""Run pearl_verl's benchmarks and print ratios measured in the same run against verl's own parts.

    python bench/run.py            full mode: more repeats and sizes, the numbers for BENCHMARKS.md
    python bench/run.py --quick    CI smoke: fewer repeats; fails when a gating ratio misses its target

Sections: the PEARL estimator vs verl's vectorised GRPO; the ``pearl_tutor`` agent loop vs verl's
tool agent loop (per turn, and concurrent episodes against 50 ms endpoints); judge throughput
against a 100 ms local judge server, and the judge prompt's shared prefix; student LLM calls per
turn; the fault drill (full mode only).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import sys
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_advantage  # noqa: E402
import bench_agent_loop  # noqa: E402

BATCH = 65_536


@dataclass(frozen=True)
class Ratio:
    """A measured ratio, its target and whether it met it.

    ``gates_quick``: whether ``--quick`` (CI) fails on a miss. Wall-clock ratios that depend on
    how loaded a shared 2-core runner is gate only full runs.
    """

    name: str
    value: float
    target: float
    gates_quick: bool = True

    @property
    def ok(self) -> bool:
        return self.value <= self.target


def advantage_section(repeats: int) -> tuple[list[str], list[Ratio]]:
    """Estimator vs verl GRPO at 64k trajectories, and scaling from 64k to 128k (medians)."""
    timings = bench_advantage.run([BATCH, 2 * BATCH], repeats)
    t = {(x.name, x.batch): x.median_ms for x in timings}
    grpo, core, plugin = bench_advantage.GRPO, bench_advantage.CORE, bench_advantage.PLUGIN
    rows = ["| call | batch | median ms | min ms |", "|---|---:|---:|---:|"]
    rows += [f"| {x.name} | {x.batch:,} | {x.median_ms:.1f} | {x.min_ms:.1f} |" for x in timings]
    # The gates compare fastest calls: load on a shared runner only ever adds time, and it adds it
    # unevenly to calls of a few ms, which moves medians by 2x between quiet and busy runs.
    fastest = {(x.name, x.batch): x.min_ms for x in timings}
    ratios = [
        Ratio(f"{core} / {grpo} @64k (fastest)", fastest[core, BATCH] / fastest[grpo, BATCH], 3.0),
        Ratio(f"{plugin} / {grpo} @64k (fastest)", fastest[plugin, BATCH] / fastest[grpo, BATCH], 3.0),
        Ratio(f"{core} / {grpo} @64k (median)", t[core, BATCH] / t[grpo, BATCH], 3.0, gates_quick=False),
        Ratio(f"{core}: time(128k) / time(64k)", t[core, 2 * BATCH] / t[core, BATCH], 2.3, gates_quick=False),
        Ratio(f"{grpo}: time(128k) / time(64k)", t[grpo, 2 * BATCH] / t[grpo, BATCH], math.inf, gates_quick=False),
    ]
    return rows, ratios


def agent_loop_section(quick: bool) -> tuple[list[str], list[Ratio]]:
    """Per-turn overhead vs verl's tool agent loop, and concurrency against 50 ms endpoints."""
    turn = bench_agent_loop.per_turn_overhead(episodes=10 if quick else 40)
    rows = [
        "| loop | ms per turn (median) |",
        "|---|---:|",
        f"| pearl_tutor (instant server and student) | {turn['pearl_ms_per_turn']:.3f} |",
        f"| verl tool_agent (instant server and tool) | {turn['verl_tool_ms_per_turn']:.3f} |",
        "",
        "| concurrent episodes | pearl_tutor wall / ideal | verl tool_agent wall / ideal |",
        "|---:|---:|---:|",
    ]
    ratios = [Ratio("pearl_tutor / verl tool_agent, CPU per turn", turn["ratio"], 1.5)]
    for episodes in (64,) if quick else (32, 64, 128, 256):
        # Best of a few runs, for the same reason as the estimator's fastest call.
        results = [bench_agent_loop.concurrency(episodes) for _ in range(2 if quick else 3)]
        pearl, verl = min(r["pearl_ratio"] for r in results), min(r["verl_tool_ratio"] for r in results)
        rows.append(f"| {episodes} | {pearl:.2f} | {verl:.2f} |")
        # One event loop: 1.15 is gated up to 64 episodes; beyond that one core is the bottleneck
        # (verl's own loop is further from ideal there). 256 is gated in verl's worker layout below.
        target = 1.15 if episodes <= 64 else math.inf
        ratios.append(Ratio(f"pearl_tutor wall / ideal, {episodes} episodes, 50 ms endpoints (best of "
                            f"{len(results)})", pearl, target))
        ratios.append(Ratio(f"verl tool_agent wall / ideal, {episodes} episodes, 50 ms endpoints (best of "
                            f"{len(results)})", verl, math.inf, gates_quick=False))
    if not quick:  # worker processes import verl each: ~45 s of start-up, too slow for the CI smoke
        per_core = 1 << (min(os.cpu_count() or 1, 8).bit_length() - 1)  # a power of two: 256 splits evenly
        for workers in dict.fromkeys((8, per_core)):
            split = bench_agent_loop.concurrency_workers(256, workers)
            rows.append(f"| 256 over {workers} agent-loop workers | {split['pearl_ratio']:.2f} | "
                        f"{split['verl_tool_ratio']:.2f} |")
            # Gated with one worker per core, up to verl's default num_workers=8 (its layout scaled to
            # the machine); 8 workers on fewer cores share them and are reported only.
            ratios.append(Ratio(f"pearl_tutor wall / ideal, 256 episodes over {workers} agent-loop workers "
                                "(best of 3)", split["pearl_ratio"], 1.15 if workers == per_core else math.inf))
            ratios.append(Ratio(f"verl tool_agent wall / ideal, 256 episodes over {workers} agent-loop workers "
                                "(best of 3)", split["verl_tool_ratio"], math.inf))
    return rows, ratios


def judge_section(quick: bool) -> tuple[list[str], list[Ratio]]:
    """512 dialogues at concurrency 64 against a judge answering after 100 ms."""
    import bench_judge

    results = bench_judge.run(repeats=1 if quick else 3)
    rows = bench_judge.markdown(results).splitlines()
    judge, floor = results[0], results[1]
    return rows, [
        Ratio("judge 512 dialogues @ concurrency 64 / ideal (100 ms server)", judge.ratio, 1.2, gates_quick=False),
        Ratio("judge / bare aiohttp floor, same prompts and server", judge.wall_s / floor.wall_s, 1.15,
              gates_quick=False),
    ]


def student_section(quick: bool) -> tuple[list[str], list[Ratio]]:
    """Offline student turns per second; LLM calls per reply turn over HTTP (target <= 2)."""
    import bench_student

    offline, llm = bench_student.run(dialogues=20 if quick else 200)
    rows = [
        "| student backend | ms per student turn | LLM calls per reply turn |",
        "|---|---:|---:|",
        f"| offline (rules + templates) | {offline['ms_per_turn']:.2f} | 0 |",
        f"| llm over HTTP, zero-latency local server | {llm['ms_per_turn']:.2f} | {llm['calls_per_reply_turn']:.2f} |",
    ]
    return rows, [Ratio("student LLM calls per reply turn", llm["calls_per_reply_turn"], 2.0)]


def faults_section(quick: bool) -> tuple[list[str], list[Ratio]]:
    """The fault drill (512 episodes, 20% faults on both endpoints): its table and its violations.

    Full runs only: the test suite runs the same drill (tests/faults), so CI does not run it twice.
    """
    if quick:
        return ["(skipped in --quick: tests/faults runs the same drill; `python bench/bench_faults.py` alone)"], []
    import tempfile

    from pearl_verl.faults.checks import run_checks
    from pearl_verl.faults.drill import DrillConfig, run_drill
    from pearl_verl.faults.drill_report import markdown, summarize

    logging.getLogger("pearl_verl").setLevel(logging.ERROR)  # every injected fault logs; the table counts them
    with tempfile.TemporaryDirectory() as scratch:
        report = run_drill(DrillConfig(), Path(scratch))
    violations = run_checks(report)
    found = sum(len(v) for v in violations.values())
    return markdown(summarize(report), violations).splitlines(), [Ratio("fault drill: check violations", found, 0)]


def machine() -> str:
    import torch

    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), {date.today().isoformat()}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (CI smoke)")
    parser.add_argument("--only", choices=("advantage", "agent_loop", "judge", "student", "faults"), action="append",
                        help="run only these sections (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args()
    sections = {
        "advantage": lambda: advantage_section(10 if args.quick else 30),
        "agent_loop": lambda: agent_loop_section(args.quick),
        "judge": lambda: judge_section(args.quick),
        "student": lambda: student_section(args.quick),
        "faults": lambda: faults_section(args.quick),
    }
    lines, ratios = [f"Machine: {machine()}"], []
    for name, section in sections.items():
        if args.only and name not in args.only:
            continue
        rows, found = section()
        lines += ["", f"### {name}", "", *rows]
        ratios += found
    lines += ["", "| ratio | measured | target | met |", "|---|---:|---:|:-:|"]
    lines += [
        f"| {r.name} | {r.value:.2f} | {'(reference)' if math.isinf(r.target) else f'<= {r.target}'} | "
        f"{'yes' if r.ok else 'NO'} |"
        for r in ratios
    ]
    print("\n".join(lines))
    if args.json:
        payload: dict[str, Any] = {"machine": machine(), "ratios": [asdict(r) | {"ok": r.ok} for r in ratios]}
        args.json.write_text(json.dumps(payload, indent=2, default=str))
    missed = [r.name for r in ratios if not r.ok and (r.gates_quick or not args.quick)]
    if missed:
        print(f"\nMISSED TARGET: {missed}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
