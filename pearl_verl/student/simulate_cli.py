"""``pearl-verl simulate PROBLEMS...``: run a simulated student against a tutor and log every turn.

Writes one JSON line per student turn (student message, intent, attempt outcome, mastery, profile,
ability, solved/concluded, LLM calls) and prints a summary: outcomes, the per-ability
controllability table, the paper's diversity statistics over the planned labels, and LLM calls per
turn. Examples::

    pearl-verl simulate data/gsm8k/test.jsonl --limit 200 --ability all --out turns.jsonl
    pearl-verl simulate data.jsonl --backend llm --base-url http://host:8000/v1 --model student \\
        --tutor endpoint --tutor-base-url http://host:8001/v1 --tutor-model tutor
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm import tqdm

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.data.problem_files import add_problem_file_args
from pearl_verl.errors import InputError
from pearl_verl.llm.chat_types import STRUCTURED_OUTPUT_HELP, UsageMeter
from pearl_verl.llm.cli_flags import add_endpoint_flags, defaults_of, endpoint_config, endpoint_values
from pearl_verl.out_paths import output_dir_text, output_file, retype
from pearl_verl.ranges import POSITIVE, SEED
from pearl_verl.redact import redact
from pearl_verl.student.fallbacks import FallbackRates, add_fallback_flag
from pearl_verl.student.simulation_runs import ABILITY_CHOICES
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.write_whole import write_whole

TUTORS: tuple[str, ...] = ("socratic", "leaking", "endpoint")
TUTOR_MAX_TOKENS = 1024
_STUDENT = StudentConfig()


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("simulate", help="run a simulated student against a tutor; one JSON line per turn")
    add_problem_file_args(parser)
    add_config_flags(parser, StudentConfig, ("simulator", "backend"))
    add_endpoint_flags(
        parser,
        role="student",
        defaults={**defaults_of(_STUDENT), "max_concurrency": 8},
        helps={
            "timeout": "seconds per request attempt (student and tutor)",
            "max-retries": "retries after a timeout, 429 or 5xx (student and tutor)",
            "concurrency": "dialogues in flight (LLM backends; also the student and tutor requests in flight)",
            "structured-output": STRUCTURED_OUTPUT_HELP + " (student)",
        },
    )
    add_config_flags(parser, StudentConfig, ("planner",))
    # not --refine/--no-refine: a resumed --out checks the no_refine it was written with (RESUME_SETTINGS)
    parser.add_argument("--no-refine", action="store_true", help="skip the refine call on failed consistency checks")
    add_config_flags(parser, StudentConfig, ("cache_dir",))
    retype(parser, "--cache-dir", output_dir_text)
    parser.add_argument("--tutor", choices=TUTORS, default="socratic", help="scripted tutors, or a chat endpoint")
    # the tutor shares the student's --timeout, --max-retries and --concurrency (see build_tutor)
    add_endpoint_flags(
        parser, "tutor-", role="tutor", flags=("base-url", "model", "api-key-env"),
        helps={"base-url": "tutor endpoint for --tutor endpoint"},
    )
    parser.add_argument(
        "--tutor-max-tokens",
        type=POSITIVE.flag,
        default=TUTOR_MAX_TOKENS,
        help="cap on one tutor message of --tutor endpoint, in tokens",
    )
    parser.add_argument(
        "--ability", choices=ABILITY_CHOICES, default="mixed", help="profile band; 'all' runs each band"
    )
    parser.add_argument("--seed", type=SEED.flag, default=0, help="fixes profiles, initial states and sampling")
    parser.add_argument(
        "--max-turns", type=POSITIVE.flag, default=15, help="tutor-turn limit"
    )
    parser.add_argument(
        "--out",
        type=output_file,
        help="write the per-turn JSONL here, each dialogue as it finishes; a rerun with the same settings resumes "
        "(default: stdout, no resume)",
    )
    parser.add_argument("--summary", type=output_file, help="also write the summary as JSON to this file")
    add_fallback_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pearl_verl.async_run import run_async
    from pearl_verl.data.problem_files import load_problem_files
    from pearl_verl.dialogue.episode_runner import EpisodeLimits
    from pearl_verl.student.factory import build_simulator
    from pearl_verl.student.simulation_runs import make_jobs, run_jobs, turn_rows
    from pearl_verl.student.turn_output import RESUME_SETTINGS, TurnOutput

    config = StudentConfig(
        **config_values(args, ("simulator", "backend", "planner", "cache_dir")),
        **endpoint_values(args),
        refine=not args.no_refine,
    )
    items = load_problem_files(args.problems, args.limit)
    if not items:
        raise InputError(f"no problems in {args.problems}.")  # eval-tutor's wording, and exit code 2
    simulator = build_simulator(config)
    tutor = build_tutor(args)
    jobs = make_jobs(items, args.ability, args.seed)
    output = TurnOutput(Path(args.out) if args.out else None, {name: getattr(args, name) for name in RESUME_SETTINGS})
    done = output.resume(jobs)
    todo = [job for job in jobs if job.index not in done]
    with output.open(), tqdm(total=len(jobs), initial=len(done), desc="simulate", unit="dialogue",
                             disable=None, file=sys.stderr) as bar:

        def write(job: Any, episode: Any) -> None:
            done[job.index] = output.write(turn_rows(episode, job.index))
            bar.update()

        run_async(run_jobs(simulator, tutor, todo, EpisodeLimits(args.max_turns), args.concurrency, on_done=write))
    summary = summarise([done[index] for index in sorted(done)])
    summary["structured_output"] = mode_note = UsageMeter.note_of(simulator)
    report = format_summary(summary) + (f"\n{mode_note}" if mode_note else "")
    print(report, file=sys.stderr if output.path is None else sys.stdout)
    if args.summary:
        write_whole(args.summary, json.dumps(summary, indent=1))
    failure = failed_run(summary, args.max_fallback_rate)
    if failure is not None:
        print(redact(f"error: {failure}"), file=sys.stderr)
        return 1
    verdict = FallbackRates.from_dict(summary["fallbacks"]).verdict(args.max_fallback_rate,
                                                                    mode=UsageMeter.mode_of(simulator))
    if verdict is not None:
        print(verdict, file=sys.stderr)
        return 1
    return 0


def build_tutor(args: argparse.Namespace) -> Any:
    """The tutor the command talks to: a scripted test double or a ChatTutor over an endpoint."""
    from pearl_verl.tutor.scripted import ScriptedLeakingTutor, ScriptedSocraticTutor

    if args.tutor == "socratic":
        return ScriptedSocraticTutor()
    if args.tutor == "leaking":
        return ScriptedLeakingTutor()
    if not args.tutor_base_url or not args.tutor_model:
        raise InputError("--tutor endpoint needs --tutor-base-url and --tutor-model.")
    from pearl_verl.llm import OpenAIChatClient, SamplingConfig
    from pearl_verl.tutor.policy import ChatTutor

    endpoint = endpoint_config(
        args, "tutor-", timeout_s=args.timeout, max_retries=args.max_retries, max_concurrency=args.concurrency
    )
    sampling = SamplingConfig(top_k=50, max_tokens=args.tutor_max_tokens)  # the paper's tutor: temperature 1, top-p 1
    return ChatTutor(OpenAIChatClient(endpoint, sampling))


def summarise(dialogues: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Outcomes, per-ability controllability, diversity statistics and LLM calls of a run's dialogues (their rows)."""
    from pearl_verl.student.diversity import diversity_report
    from pearl_verl.student.simulation_runs import ability_table, call_table, labelled_rows, source_table

    labelled = [d for d in labelled_rows(dialogues) if d]
    return {
        "dialogues": len(dialogues),
        "end_reasons": dict(Counter(rows[0]["end_reason"] for rows in dialogues)),
        "by_ability": ability_table(dialogues),
        "diversity": diversity_report(labelled).to_dict() if labelled else None,
        "llm_calls": call_table(dialogues),
        "sources": source_table(dialogues),
        "fallbacks": FallbackRates.of(dialogues).to_dict(),
    }


def format_summary(summary: dict[str, Any]) -> str:
    from pearl_verl.student.diversity import DiversityReport, format_report

    lines = [
        f"dialogues {summary['dialogues']}: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["end_reasons"].items()))
    ]
    for band, row in summary["by_ability"].items():
        lines.append(
            f"ability {band:<6} dialogues {row['dialogues']:>4} turns {row['turns']:>5} | correct attempts "
            f"{100 * row['correct_share']:.1f}% | help-seeking/confusion {100 * row['help_or_confusion_share']:.1f}% | "
            f"solved {100 * row['solved_share']:.1f}%"
        )
    if summary["diversity"] is not None:
        lines.append(format_report(DiversityReport(**summary["diversity"])))
    calls = summary["llm_calls"]
    lines.append(
        f"LLM calls {calls['llm_calls']} (decomposition {calls['decomposition_calls']}) | per reply turn "
        f"{calls['calls_per_reply_turn']:.3f} | per student turn incl. opening {calls['calls_per_student_turn']:.3f}"
    )
    sources = summary.get("sources") or {}
    if any(sources.values()):
        lines.append(
            "student reply turns: labels from "
            + _shares(sources["plan_source"])
            + " | messages from "
            + _shares(sources["reply_source"])
        )
    fallbacks = FallbackRates.from_dict(summary["fallbacks"]).line() if "fallbacks" in summary else None
    if fallbacks:
        lines.append(fallbacks)
    return "\n".join(lines)


def _shares(shares: dict[str, float]) -> str:
    return ", ".join(f"{source} {100 * share:.1f}%" for source, share in shares.items())


def failed_run(summary: dict[str, Any], max_fallback_rate: float = 0.0) -> str | None:
    """Why a run produced nothing usable (every dialogue failed, or every reply fell back), or None.

    ``max_fallback_rate`` 1 (``--max-fallback-rate 1``) accepts a run whose replies all fell back, as
    its help says: the fallback is a test double the user asked to keep.
    """
    from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS

    reasons = summary["end_reasons"]
    if summary["dialogues"] and all(reason in FAILED_EPISODE_REASONS for reason in reasons):
        return f"every dialogue failed ({', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))})"
    replies = summary["sources"]["reply_source"]
    if replies.get("fallback", 0.0) == 1.0 and max_fallback_rate < 1:
        return "every student reply fell back to a template (the endpoint's replies never passed parsing or checks)"
    return None
