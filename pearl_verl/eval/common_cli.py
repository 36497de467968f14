"""Flags and helpers shared by the evaluation commands (judge, student, progress bars)."""

from __future__ import annotations

import argparse
from typing import Any

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.errors import InputError
from pearl_verl.judge.backends import BACKEND_SETTINGS, JUDGE_BACKENDS, judge_backends, require_endpoint_flags_of
from pearl_verl.judge.judge_config import JudgeConfig
from pearl_verl.llm.cli_flags import add_endpoint_flags, defaults_of, endpoint_values
from pearl_verl.student.student_config import StudentConfig

_JUDGE_DEFAULTS = JudgeConfig(backend="offline")
_JUDGES = judge_backends(scores_criteria=True)
"""The backends an evaluation can score with: those that score the rubric's criteria (not the probes)."""
_JUDGE_FIELDS = ("samples", "temperature", "top_k", "max_tokens", *BACKEND_SETTINGS)
"""The judge's sampling settings and its backends' own settings that the evaluation commands take, as
``--judge-samples`` and so on."""


def add_judge_flags(parser: argparse.ArgumentParser, allow_none: bool = True) -> None:
    """``--judge`` and its endpoint flags."""
    choices = (*_JUDGES, "none") if allow_none else _JUDGES
    group = parser.add_argument_group("judge (the trained PEARL judge, or an external evaluator model)")
    group.add_argument(
        "--judge", choices=choices, default="llm",
        help="llm endpoint, a CPU judge (fitted: one-turn criteria fitted to teachers' labels; offline: the heuristic "
             "test double)" + (", or none" if allow_none else ""),
    )
    add_endpoint_flags(group, "judge-", role="judge", defaults=defaults_of(_JUDGE_DEFAULTS))
    group.add_argument("--judge-label", help="how tables name the scorer, e.g. 'PEARL-RM' or 'external evaluator X'")
    add_config_flags(group, JudgeConfig, _JUDGE_FIELDS, prefix="judge-", zero_is_null=("top_k",),
                     helps={"top_k": "judge top-k"})


def judge_config(args: argparse.Namespace) -> JudgeConfig | None:
    """The judge the flags describe; None for ``--judge none``."""
    if args.judge == "none":
        return None
    require_endpoint_flags_of(args, args.judge, "judge-", "--judge")
    values = config_values(args, _JUDGE_FIELDS, "judge-")
    return JudgeConfig(backend=args.judge, **endpoint_values(args, "judge-"), **{**values, "top_k": values["top_k"] or None})


def judge_label(args: argparse.Namespace) -> str:
    """How tables name the scorer; a CPU judge is always named for what it is (its backend's ``label``)."""
    if args.judge == "none":
        return "not judged"
    if JUDGE_BACKENDS[args.judge].label:
        return JUDGE_BACKENDS[args.judge].label
    return args.judge_label or f"LLM judge {args.judge_model} at {args.judge_base_url}"


def judge_setup(args: argparse.Namespace) -> dict[str, Any]:
    """The judge settings a run records (no key)."""
    return {
        "judge": args.judge,
        "base_url": args.judge_base_url,
        "model": args.judge_model,
        "label": judge_label(args),
        "samples": args.judge_samples,
        "temperature": args.judge_temperature,
        "top_k": args.judge_top_k,
        "structured_output": args.judge_structured_output,
        **({p: getattr(args, f"judge_{p}") for p in JUDGE_BACKENDS[args.judge].params} if args.judge != "none" else {}),
    }


def add_student_flags(parser: argparse.ArgumentParser) -> None:
    """The student endpoint flags (one endpoint serves every simulator)."""
    group = parser.add_argument_group("student simulator")
    add_config_flags(
        group, StudentConfig, ("backend",), prefix="student-",
        helps={"backend": "llm (an OpenAI-compatible endpoint) or offline (the PEARL simulator's CPU stand-in; "
                        "the baselines need llm)"},
    )
    add_endpoint_flags(group, "student-", role="student", defaults=defaults_of(StudentConfig()))
    add_config_flags(group, StudentConfig, ("planner",), prefix="student-")


def student_setup(args: argparse.Namespace) -> dict[str, Any]:
    """The student settings a run records (no key)."""
    return {
        "backend": args.student_backend,
        "base_url": args.student_base_url,
        "model": args.student_model,
        "planner": args.student_planner,
        "structured_output": args.student_structured_output,
    }


def build_simulators(args: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    """One simulator per name, all over the same student endpoint.

    Raises:
        InputError: a baseline simulator without a student endpoint.
    """
    from pearl_verl.student.factory import build_simulator

    baselines = [n for n in names if n != "pearl"]
    if baselines and not (args.student_base_url and args.student_model):
        raise InputError(
            f"simulator(s) {baselines} are LLM role-play students: pass --student-base-url and --student-model "
            "(the same endpoint serves the PEARL simulator with --student-backend llm)."
        )
    endpoint = endpoint_values(args, "student-")
    offline = {**endpoint, "base_url": None, "model": None}
    simulators = {}
    for name in names:
        backend = args.student_backend if name == "pearl" else "llm"
        config = StudentConfig(
            simulator=name,
            backend=backend,
            **(endpoint if backend == "llm" else offline),
            planner=args.student_planner,
        )
        simulators[name] = build_simulator(config)
    return simulators


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress", choices=("auto", "on", "off"), default="auto", help="tqdm bar on stderr (auto: when a terminal)"
    )


