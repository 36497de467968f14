"""``pearl-verl gen-sft PREPARED.parquet... -o DIR``: cold-start SFT dialogues from a teacher model.

Writes ``DIR/dialogues.jsonl`` (every generated dialogue, appended as it finishes; a rerun resumes
it, and is refused when the settings in ``DIR/generation_settings.json`` differ), then
``DIR/train.parquet`` / ``DIR/val.parquet`` for verl's multi-turn SFT trainer and
``DIR/sft_summary.json`` (kept and dropped by reason, tutor-turn histograms). Filters and formats:
:mod:`pearl_verl.sft.filters`, :mod:`pearl_verl.sft.dataset`, docs/data.md. Examples::

    pearl-verl gen-sft prepared/pearl/train.parquet -o prepared/pearl_sft --samples-per-row 4 \\
        --teacher-base-url https://api.deepseek.com/v1 --teacher-model deepseek-chat \\
        --teacher-api-key-env DEEPSEEK_API_KEY --student-backend llm \\
        --student-base-url http://student-host:8000/v1 --student-model student
    pearl-verl gen-sft prepared/pearl/train.parquet -o /tmp/sft --teacher scripted   # offline test double

Exit status: 0 when every job has a dialogue; 1 when some job crashed (rerun to finish it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.errors import InputError
from pearl_verl.judge.backends import judge_backends
from pearl_verl.judge.judge_config import JudgeConfig
from pearl_verl.llm.chat_types import UsageMeter
from pearl_verl.llm.cli_flags import CONNECTION_FLAGS, add_endpoint_flags, defaults_of, endpoint_values
from pearl_verl.llm.settings import SAMPLING_FIELDS, EndpointSettings
from pearl_verl.out_paths import output_dir
from pearl_verl.progress import progress_bar
from pearl_verl.ranges import POSITIVE, VAL_FRACTION
from pearl_verl.resume_guard import check_resume, write_settings
from pearl_verl.sft.filters import FilterConfig
from pearl_verl.student.fallbacks import FallbackRates, add_fallback_flag
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.write_whole import write_whole

TEACHERS: tuple[str, ...] = ("endpoint", "scripted")
JUDGES: tuple[str, ...] = ("none", *judge_backends(scores_criteria=True))
TEACHER_SAMPLING = {"temperature": 0.7, "top_p": 0.95, "max_tokens": 1024}
"""The teacher's sampling defaults where they differ from :class:`EndpointSettings`' (ours; not in the paper)."""
_STUDENT_FIELDS = ("planner", "cache_dir")
RESUME_SETTINGS = ("teacher", "teacher_model", "teacher_temperature", "teacher_top_p", "teacher_top_k",
                   "teacher_max_tokens", "no_reference", "max_turns", "samples_per_row", "simulator", "student_backend",
                   "student_model", "student_planner", "student_structured_output")
"""What decides a recorded dialogue: a rerun that resumes ``dialogues.jsonl`` must use the same values.

The gate judge is left out on purpose: a rerun may add one to judge the recorded dialogues."""
SETTINGS_NAME = "generation_settings.json"
_FILTER_FIELDS = ("min_tutor_turns", "attempts_before_answer", "turn_balance", "judge_min_score")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "gen-sft",
        help="a teacher model tutors simulated students -> filtered verl multi-turn SFT parquet (resumable)",
        description="Generate cold-start SFT dialogues: the teacher tutors the simulated student of every prepared "
        "row through the RL episode code; dialogues are recorded as they finish (a rerun resumes), filtered, and "
        "written as verl multi-turn SFT parquet with a summary.",
    )
    parser.add_argument("inputs", nargs="+", type=Path, help="prepared parquet files (pearl-verl prepare-data)")
    parser.add_argument("-o", "--out-dir", type=output_dir, required=True, help="output folder (records, parquet, summary)")
    parser.add_argument("--samples-per-row", type=POSITIVE.flag, default=1, help="dialogues per prepared row")
    parser.add_argument("--limit", type=POSITIVE.flag, help="use only the first N prepared rows")
    parser.add_argument("--concurrency", type=POSITIVE.flag, default=32, help="dialogues in flight")
    parser.add_argument("--max-turns", type=POSITIVE.flag, default=15, help="tutor-turn limit")
    parser.add_argument("--no-reference", action="store_true", help="hide the reference solution from the tutor")
    parser.add_argument("--retry-failed", action="store_true", help="generate again dialogues with a backend failure")
    parser.add_argument("--finalize-only", action="store_true", help="only rebuild the parquet and summary")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    _teacher_args(parser.add_argument_group("teacher (the tutor that writes the SFT targets)"))
    _student_args(parser.add_argument_group("student simulator"))
    _judge_args(parser.add_argument_group("judge gate (optional)"))
    _filter_args(parser.add_argument_group("filters and output"))
    parser.set_defaults(handler=run)


def _teacher_args(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--teacher",
        choices=TEACHERS,
        default="endpoint",
        help="an OpenAI-compatible endpoint, or the scripted test double",
    )
    add_endpoint_flags(  # the teacher's requests in flight are the dialogues in flight, --concurrency
        group,
        "teacher-",
        role="teacher",
        flags=CONNECTION_FLAGS,
        defaults={"timeout_s": 300.0},
        helps={"model": "teacher model name as served"},
    )
    add_config_flags(
        group, EndpointSettings, SAMPLING_FIELDS, prefix="teacher-", defaults=TEACHER_SAMPLING,
        helps={"top_k": "teacher top-k, sent as vLLM's top_k (leave unset for hosted APIs)",
               "max_tokens": "cap on one tutor message"},
    )


def _student_args(group: argparse._ArgumentGroup) -> None:
    add_config_flags(group, StudentConfig, ("simulator",))
    add_config_flags(group, StudentConfig, ("backend",), prefix="student-")
    add_endpoint_flags(group, "student-", role="student", defaults=defaults_of(StudentConfig()))
    add_config_flags(group, StudentConfig, _STUDENT_FIELDS, prefix="student-")
    add_fallback_flag(group)


def _judge_args(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--judge-backend", choices=JUDGES, default="none",
                       help="the gate's judge: none, the llm endpoint, or a CPU judge (fitted: fitted to teachers' labels; "
                            "offline: the heuristic test double)")
    add_endpoint_flags(group, "judge-", role="judge", defaults=defaults_of(JudgeConfig(backend="offline")))
    add_config_flags(group, FilterConfig, ("judge_min_score",))


def _filter_args(group: argparse._ArgumentGroup) -> None:
    add_config_flags(group, FilterConfig, ("min_tutor_turns", "attempts_before_answer", "turn_balance"))
    group.add_argument("--keep-duplicates", action="store_true", help="keep repeated dialogues")
    group.add_argument("--tokenizer", help="the SFT model's tokenizer folder, for the length filter")
    group.add_argument("--max-length", type=POSITIVE.flag, help="drop chats longer than this many tokens (= data.max_length)")
    group.add_argument("--val-fraction", type=VAL_FRACTION.flag, default=0.02, help="share of problems for validation")


def run(args: argparse.Namespace) -> int:
    from pearl_verl.sft.dataset import RECORDS_NAME, SUMMARY_NAME, build_sft, read_records, write_sft
    from pearl_verl.sft.generate import GenerationStats, load_samples, make_jobs

    filters = _filter_config(args)
    jobs = make_jobs(load_samples(args.inputs, args.limit), args.samples_per_row)
    records_path = args.out_dir / RECORDS_NAME
    stats, tutor, modes, student_mode = GenerationStats(jobs=len(jobs)), None, {}, None
    if not args.finalize_only:
        stats, tutor, modes, student_mode = _generate(args, jobs, records_path)
    records, unreadable = read_records(records_path)
    rows, summary = build_sft(
        [job.id for job in jobs],
        records,
        filters,
        include_reference=not args.no_reference,
        val_fraction=args.val_fraction,
        token_counter=_token_counter(args.tokenizer) if args.tokenizer else None,
        max_tokens=args.max_length,
    )
    written = write_sft(rows, args.out_dir)
    fallbacks = FallbackRates.of(r["episode"].get("student_trace", ()) for r in records.values() if r.get("episode"))
    report = {**summary.to_dict(), "run": vars(stats), "unreadable_record_lines": unreadable,
              "student_fallbacks": fallbacks.to_dict(), "structured_output": modes}
    if tutor is not None and hasattr(getattr(tutor, "backend", None), "usage"):
        report["teacher_usage"] = tutor.backend.usage.snapshot()
    write_whole(args.out_dir / SUMMARY_NAME, json.dumps(report, indent=1))
    print(
        f"this run: generated {stats.generated}, judged {stats.judged_only}, resumed {stats.resumed}, "
        f"backend failures {stats.backend_failures}, crashed {stats.crashed}"
    )
    for line in summary.lines():
        print(line)
    if fallbacks.line():
        print(fallbacks.line())
    for role, note in modes.items():
        print(f"{role} {note}")
    if args.teacher == "scripted" and not args.finalize_only:
        print("note: scripted teacher (a test double), not a teacher model")
    if stats.backend_failures:
        print(f"note: {stats.backend_failures} dialogue(s) ended in a backend failure; --retry-failed runs them again")
    print("wrote " + ", ".join(str(p) for p in [*written, args.out_dir / SUMMARY_NAME]))
    verdict = fallbacks.verdict(args.max_fallback_rate, flag="--student-structured-output", mode=student_mode)
    if verdict is not None:
        print(verdict, file=sys.stderr)
        return 1
    if summary.dialogues and not summary.kept:  # an empty SFT set trains nothing: not a success
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(summary.dropped.items()) if n) or "none recorded"
        print(f"error: no dialogue was kept, so the SFT files are empty (dropped: {reasons}); see {SUMMARY_NAME}",
              file=sys.stderr)
        return 1
    return 1 if stats.crashed or summary.missing else 0


def _filter_config(args: argparse.Namespace) -> FilterConfig:
    """The filter settings, after the flag checks that span several flags."""
    if bool(args.tokenizer) != bool(args.max_length):
        raise InputError("--tokenizer and --max-length go together (the length filter needs both).")
    return FilterConfig(**config_values(args, _FILTER_FIELDS), dedup=not args.keep_duplicates)


def _generate(args: argparse.Namespace, jobs: list, records_path: Path) -> tuple[Any, Any, dict[str, str], str | None]:
    """Run the jobs that are not recorded yet; (run counters, the teacher, {role: structured-output note},
    the student's structured-output mode)."""
    from pearl_verl.async_run import run_async
    from pearl_verl.dialogue.episode_runner import EpisodeLimits
    from pearl_verl.sft.generate import generate

    settings = {name: getattr(args, name) for name in RESUME_SETTINGS}
    settings_path = records_path.with_name(SETTINGS_NAME)
    check_resume(records_path, settings_path, settings, "--out-dir", missing_ok=True)
    tutor, simulator, judge = build_teacher(args), build_student(args), build_gate_judge(args)
    write_settings(settings_path, settings)
    progress = progress_bar("off" if args.no_progress else "auto", len(jobs), "dialogue", "gen-sft")
    try:
        stats = run_async(
            generate(
                jobs,
                simulator,
                tutor,
                records_path,
                judge=judge,
                limits=EpisodeLimits(args.max_turns),
                concurrency=args.concurrency,
                retry_failed=args.retry_failed,
                on_done=(lambda record: progress.update(1)) if progress is not None else None,
            )
        )
    finally:
        if progress is not None:
            progress.close()
    notes = {role: UsageMeter.note_of(part) for role, part in (("student", simulator), ("judge", judge))}
    return stats, tutor, {role: note for role, note in notes.items() if note}, UsageMeter.mode_of(simulator)


def build_teacher(args: argparse.Namespace) -> Any:
    """The teacher: a ChatTutor over the endpoint, or the scripted Socratic test double."""
    from pearl_verl.tutor.policy import ChatTutor
    from pearl_verl.tutor.scripted import ScriptedSocraticTutor

    if args.teacher == "scripted":
        return ScriptedSocraticTutor()
    if not args.teacher_base_url or not args.teacher_model:
        raise InputError(
            "--teacher endpoint needs --teacher-base-url and --teacher-model (or --teacher scripted, the offline "
            "test double)."
        )
    from pearl_verl.llm import OpenAIChatClient

    teacher = EndpointSettings(
        **endpoint_values(args, "teacher-"),
        **config_values(args, SAMPLING_FIELDS, "teacher-"),
        max_concurrency=args.concurrency,
    )
    sampling = teacher.sampling()
    return ChatTutor(OpenAIChatClient(teacher.endpoint(), sampling), sampling, include_reference=not args.no_reference)


def build_student(args: argparse.Namespace) -> Any:
    """The simulated student from the student flags."""
    from pearl_verl.student.factory import build_simulator

    return build_simulator(
        StudentConfig(
            simulator=args.simulator,
            backend=args.student_backend,
            **endpoint_values(args, "student-"),
            **config_values(args, _STUDENT_FIELDS, "student-"),
        )
    )


def build_gate_judge(args: argparse.Namespace) -> Any:
    """The judge of the SFT gate, or None."""
    if args.judge_backend == "none":
        return None
    from pearl_verl.judge.judge_config import build_judge

    return build_judge(JudgeConfig(backend=args.judge_backend, **endpoint_values(args, "judge-")))


def _token_counter(tokenizer_path: str) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)

    def count(messages: list[dict[str, str]]) -> int:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count
