"""Student simulator cost: offline turns per second, and the LLM path's own overhead and calls per turn.

    python bench/bench_student.py [--dialogues 200] [--json out.json]

- offline: the controllable simulator (rule planner, template realiser) against the scripted
  Socratic tutor on GSM8K test problems; reports student turns per second and ms per turn.
- llm: the same simulator with ``backend="llm"`` over real HTTP to a zero-latency local
  OpenAI-compatible server (:class:`LocalChatServer`) whose replies pass the consistency check, so
  the time is our own overhead (prompting, client, parsing, checks) plus the loopback round trips,
  not a model's; reports ms per turn and LLM calls per reply turn (target <= 2).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path

from pearl_verl.data.location import data_dir
from pearl_verl.data.problem_files import load_problems
from pearl_verl.dialogue.episode_runner import EpisodeLimits
from pearl_verl.llm.local_server import LocalChatServer
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.simulation_runs import call_summary, make_jobs, run_jobs
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.tutor.scripted import ScriptedSocraticTutor

DATA = data_dir() / "gsm8k" / "test.jsonl"


def consistent_reply(request: dict) -> str:
    """Planner JSON, or a student message that does what the realiser prompt asks."""
    system = request["messages"][0]["content"]
    if system.startswith("You plan the next turn"):
        return '{"behaviours": ["uncertainty", "help_seeking"], "leave": false}'
    for pattern, template in (
        (r"State the final answer (.+?); it must", "So the answer is {}. Is that right?"),
        (r"commit to the value (\S+)\. Step", "I think it is {}. Is that right?"),
        (r"state its result (\S+):", "That gives {}, right?"),
    ):
        if match := re.search(pattern, system):
            return template.format(match.group(1))
    return "I'm not sure what to do here, can you help?"


def measure(config: StudentConfig, dialogues: int) -> dict[str, float]:
    items = load_problems(DATA, dialogues)
    simulator = build_simulator(config)
    start = time.perf_counter()
    episodes = asyncio.run(
        run_jobs(simulator, ScriptedSocraticTutor(), make_jobs(items, "mixed", 0), EpisodeLimits(15), concurrency=8)
    )
    elapsed = time.perf_counter() - start
    calls = call_summary(episodes)
    turns = calls["reply_turns"]
    return {
        "dialogues": len(episodes),
        "reply_turns": turns,
        "seconds": elapsed,
        "ms_per_turn": 1e3 * elapsed / turns,
        "turns_per_s": turns / elapsed,
        "calls_per_reply_turn": calls["calls_per_reply_turn"],
    }


def run(dialogues: int = 200) -> tuple[dict[str, float], dict[str, float]]:
    """(offline measurement, LLM-backend measurement over a zero-latency local server)."""
    offline = measure(StudentConfig(), dialogues)
    with LocalChatServer(consistent_reply, model="student") as server:
        config = StudentConfig(backend="llm", base_url=server.base_url, model="student", decomposer="rules")
        llm = measure(config, max(1, dialogues // 4))
    return offline, llm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=200)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    offline, llm = run(args.dialogues)
    results = {"offline": offline, "llm (local server, no model time)": llm}
    for name, row in results.items():
        print(
            f"{name:<36} {row['dialogues']:>4} dialogues {row['reply_turns']:>5} turns | "
            f"{row['ms_per_turn']:.2f} ms/turn | {row['turns_per_s']:.0f} turns/s | "
            f"LLM calls per reply turn {row['calls_per_reply_turn']:.2f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
