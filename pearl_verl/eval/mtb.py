"""MathTutorBench's nine tasks from local files, with its metrics (no dataset or model hub).

After Macina et al., "MathTutorBench" (EMNLP 2025; data CC BY-SA 4.0). Task set, data, answer
formats and metrics follow the benchmark; the prompt wording is ours (same instructions and output
formats), so numbers are comparable in task and metric but not guaranteed to equal leaderboard runs.

| task | data | metric |
|---|---|---|
| problem_solving | GSM8K test | accuracy (final answer, math-verify) |
| socratic_questioning | GSM8K socratic test | sacreBLEU: per problem the best sentence BLEU of a generated line against the reference sub-questions, averaged, /100 |
| solution_correctness | StepVerify (each row twice: its incorrect and the correct solution) | F1 with "incorrect" as the positive class (+ accuracy, precision, recall) |
| mistake_location | StepVerify (same two examples per row; 0 = no error) | micro-F1 of the first wrong step (+ macro-F1) |
| mistake_correction | StepVerify incorrect solutions | accuracy of the corrected final answer |
| scaffolding_generation(_hard) | MathDial bridge (hard) | question-match rate; win rate with a pedagogical RM |
| pedagogy_following(_hard) | MathDial bridge (hard), pedagogical instruction | question-match rate; win rate with a pedagogical RM |

The pedagogy tasks have two different metrics that must not be confused: the QUESTION-MATCH RATE
(the share of generated teacher turns that look like a question: a ``?`` or a question word; what
the benchmark's main script prints) and the WIN RATE (the share of generated turns a pedagogical
reward model scores strictly above the human teacher's turn; needs the reward model). Results name
them ``question_match_rate`` and ``win_rate`` and the report prints them in separate tables.

Deviations, on purpose: answers are compared with math-verify rather than float equality of the
last regex number; an answer that does not parse (no Yes/No, no step number) counts as wrong and is
counted as ``unparsed``, instead of defaulting to "incorrect"; student steps are joined by real line
breaks (the benchmark joins them with a literal backslash-n).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.answers import answers_match, gsm8k_final_answer
from pearl_verl.errors import InputError
from pearl_verl.jsonl import read_json, read_objects
from pearl_verl.llm.chat_types import Message

QUESTION_WORDS = frozenset(
    {"what", "how", "why", "when", "where", "which", "who", "whose", "whom", "can", "could", "would"}
)
PEDAGOGY_TASKS: tuple[str, ...] = (
    "scaffolding_generation",
    "pedagogy_following",
    "scaffolding_generation_hard",
    "pedagogy_following_hard",
)
TASKS: tuple[str, ...] = (
    "problem_solving",
    "socratic_questioning",
    "solution_correctness",
    "mistake_location",
    "mistake_correction",
    *PEDAGOGY_TASKS,
)
TASK_TITLES: dict[str, str] = {
    "problem_solving": "Problem Solving",
    "socratic_questioning": "Socratic Questioning",
    "solution_correctness": "Solution Correctness",
    "mistake_location": "Mistake Location",
    "mistake_correction": "Mistake Correction",
    "scaffolding_generation": "Scaffolding",
    "pedagogy_following": "Pedagogy IF",
    "scaffolding_generation_hard": "Scaffolding (Hard)",
    "pedagogy_following_hard": "Pedagogy IF (Hard)",
}
DATA_FILES: dict[str, str] = {
    "problem_solving": "gsm8k/test.jsonl",
    "socratic_questioning": "gsm8k/test_socratic.jsonl",
    "solution_correctness": "stepverify/dataset.json",
    "mistake_location": "stepverify/dataset.json",
    "mistake_correction": "stepverify/dataset.json",
    "scaffolding_generation": "mathtutorbench/mathdial_bridge.json",
    "pedagogy_following": "mathtutorbench/mathdial_bridge.json",
    "scaffolding_generation_hard": "mathtutorbench/mathdial_bridge_hard.json",
    "pedagogy_following_hard": "mathtutorbench/mathdial_bridge_hard.json",
}
STOPS: dict[str, tuple[str, ...]] = {
    "problem_solving": ("Question:",),
    "socratic_questioning": ("Problem:", "\n"),
    "solution_correctness": ("Problem:", "Q:", "Explanation:"),
    "mistake_location": ("Problem:", "Q:"),
    "mistake_correction": ("Problem:", "Student:"),
    **{task: ("Student:", "\n\n", "Teacher:") for task in PEDAGOGY_TASKS},
}

_SCAFFOLD = (
    "You are an experienced math teacher. Reply to the student in a helpful and caring way; the student is working "
    "on the problem below."
)
_PEDAGOGY = (
    "You are a friendly, supportive tutor. Help the student reach their goal and steer them back when they drift. "
    "Use guiding questions so they take small steps towards the big ideas, and probing questions so they think "
    "deeper. Ask only one question per turn so the student is not overwhelmed, and close the conversation once the "
    "student has shown they understand."
)


@dataclass(frozen=True)
class Example:
    """One benchmark example.

    Attributes:
        task: the task name.
        index: position within the task (stable across runs).
        prompt: what the model under test receives (one user message).
        target: the gold value (answer, question list, Yes/No, step number); the human teacher's
            turn for the pedagogy tasks.
        context: for the pedagogy tasks, what the reward model sees before the scored turn.
    """

    task: str
    index: int
    prompt: str
    target: str
    context: Mapping[str, Any] | None = None

    @property
    def id(self) -> str:
        return f"{self.task}|{self.index:05d}"


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InputError(
            f"MathTutorBench data file {path} does not exist; point --data-dir (or PEARL_VERL_DATA_DIR) at a folder "
            "laid out like the repository's data/: gsm8k/test.jsonl, "
            "gsm8k/test_socratic.jsonl, stepverify/dataset.json, mathtutorbench/mathdial_bridge(_hard).json."
        )
    if path.suffix == ".json":
        return read_json(path, "MathTutorBench data file")
    return [row for _, row in read_objects(path, "MathTutorBench data file")]


def _steps(steps: Sequence[str]) -> str:
    return "\n".join(f"Step {i} - {step.strip()}" for i, step in enumerate(steps, start=1))


def _teacher_opening(row: Mapping[str, Any]) -> tuple[str, str]:
    """StepVerify: the teacher lines before the first student turn, and that student turn."""
    lines, student = [], ""
    for turn in row["dialog_history"]:
        if turn["user"] == "Student":
            student = turn["text"]
            break
        lines.append(f"Teacher: {turn['text']}")
    return "\n".join(lines), student


def _stepverify(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A row's incorrect-solution example and its correct-solution example."""
    dialog, student = _teacher_opening(row)
    wrong = {
        "student_solution": _steps(row["student_incorrect_solution"][:-1]),
        "chat": student,
        "is_error": True,
        "error_step": int(row["incorrect_index"]) + 1,
    }
    right = {
        "student_solution": _steps(row["reference_solution"].split("\n")[:-1]),
        "chat": row["student_correct_response"],
        "is_error": False,
        "error_step": 0,
    }
    final = row["reference_solution"].split("\n")[-1].replace(",", "").strip()
    return [{**e, "question": row["problem"], "dialog": dialog, "final": final} for e in (wrong, right)]


def _bridge_dialog(turns: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(f"{'Student' if t['user'] == 'Student' else 'Teacher'}: {t['text']}" for t in turns)


def build_examples(task: str, data_dir: Path, limit: int | None = None) -> list[Example]:
    """The examples of one task (the first ``limit`` source rows when given).

    Raises:
        InputError: for an unknown task or a missing data file.
    """
    if task not in TASKS:
        raise InputError(f"unknown MathTutorBench task {task!r}; tasks: {list(TASKS)}.")
    rows = _read(data_dir / DATA_FILES[task])[:limit]
    return list(_examples(task, rows))


def _examples(task: str, rows: Sequence[Mapping[str, Any]]) -> Iterator[Example]:
    if task == "problem_solving":
        for i, row in enumerate(rows):
            prompt = (
                "You are a helpful math tutor. Solve the question step by step, then give the final answer after "
                f"'Final answer:'.\nQuestion: {row['question']}\nAnswer:"
            )
            yield Example(task, i, prompt, gsm8k_final_answer(row["answer"]))
    elif task == "socratic_questioning":
        for i, row in enumerate(rows):
            prompt = (
                "You are a helpful math tutor who breaks a problem into step-by-step questions. Write only the list "
                f"of questions, all on one line.\nProblem: {row['question']}\nQuestions:"
            )
            yield Example(task, i, prompt, json.dumps(reference_questions(row["answer"])))
    elif task in ("solution_correctness", "mistake_location", "mistake_correction"):
        yield from _stepverify_examples(task, rows)
    else:
        instruction = _PEDAGOGY if task.startswith("pedagogy") else _SCAFFOLD
        for i, row in enumerate(rows):
            history, human = row["dialog_history"][:-1], row["dialog_history"][-1]
            prompt = (
                f"{instruction}\nProblem: {row['problem']}\nConversation:\n{_bridge_dialog(history)}\n"
                "Teacher (at most two sentences):"
            )
            context = {"problem": row["problem"], "reference_solution": row["reference_solution"], "history": history}
            yield Example(task, i, prompt, human["text"], context)


def _stepverify_examples(task: str, rows: Sequence[Mapping[str, Any]]) -> Iterator[Example]:
    examples = [e for row in rows for e in _stepverify(row)]
    if task == "mistake_correction":
        examples = [e for e in examples if e["is_error"]]
    for i, e in enumerate(examples):
        conversation = f"Conversation:\n{e['dialog']}\nStudent: {e['chat']}"
        if task == "solution_correctness":
            prompt = (
                "You are an experienced math teacher. Decide whether the student's solution to the problem is "
                f"correct.\nProblem: {e['question']}\n{conversation}\n"
                "Q: Is the student's solution incorrect? Answer only 'Yes' if it is incorrect or 'No' if it is "
                "correct.\nA:"
            )
            yield Example(task, i, prompt, "Yes" if e["is_error"] else "No")
        elif task == "mistake_location":
            prompt = (
                "You are an experienced math teacher. Find the step of the first mistake in the student's solution.\n"
                f"Problem: {e['question']}\nStudent Solution:\n{e['student_solution']}\n"
                "Q: Which step holds the first error? Write only its step number, or 0 if there is no error.\nA:"
            )
            yield Example(task, i, prompt, str(e["error_step"]))
        else:
            prompt = (
                "You are a helpful math tutor helping a student. Given the problem and the conversation, write a "
                "complete, correct solution, showing your work, and state the final answer after 'Final Answer:'.\n"
                f"Problem: {e['question']}\n{conversation}\nTeacher:"
            )
            yield Example(task, i, prompt, e["final"])


def reference_questions(answer: str) -> list[str]:
    """GSM8K-socratic's sub-questions: the text before `` ** `` on each line that has one."""
    return [parts[0] for line in answer.split("\n") if len(parts := line.split(" ** ")) == 2]


def is_question(text: str) -> bool:
    """The benchmark's question test: a ``?``, or a question word among the lower-cased tokens."""
    return "?" in text or any(word in QUESTION_WORDS for word in text.lower().split())


_FINAL = re.compile(r"final answer\s*:?\s*\$?\s*(-?[\d,]*\.?\d+)", re.IGNORECASE)
_NUMBER = re.compile(r"-?[\d,]*\.?\d+")


def final_number(response: str) -> str | None:
    """The number after 'Final answer:' if any, else the last number of the response."""
    match = _FINAL.search(response)
    if match:
        return match.group(1).replace(",", "")
    numbers = [n.replace(",", "") for n in _NUMBER.findall(response) if any(c.isdigit() for c in n)]
    return numbers[-1] if numbers else None


def yes_no(response: str) -> bool | None:
    """True for an answer starting with 'yes' (incorrect), False for 'no', None otherwise (unparsed)."""
    words = re.findall(r"[a-z]+", response.lower())
    if not words or words[0] not in ("yes", "no"):
        return None
    return words[0] == "yes"


def step_number(response: str) -> int | None:
    """The first integer of the response, or None (unparsed)."""
    match = re.search(r"\d+", response)
    return int(match.group()) if match else None


def message_for(example: Example) -> list[Message]:
    """The model's input: the task prompt as one user message."""
    return [{"role": "user", "content": example.prompt}]


def sentence_bleu(hypothesis: str, references: Sequence[str]) -> float:
    """sacreBLEU's sentence BLEU (0-100) with its default settings.

    Raises:
        InputError: when sacrebleu is not installed (it is a dependency of pearl_verl).
    """
    try:
        import sacrebleu
    except ImportError as exc:
        raise InputError("socratic_questioning needs sacrebleu: pip install sacrebleu") from exc
    return float(sacrebleu.sentence_bleu(hypothesis, list(references)).score)


def _f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def task_metrics(task: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The task's metrics over generation rows (``response``, ``target``; flagged rows excluded)."""
    ok = [r for r in rows if r["ok"]]
    out: dict[str, Any] = {"n": len(ok), "flagged": len(rows) - len(ok)}
    if not ok:
        return out
    compute: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]] = _METRICS[task]
    out.update(compute(ok))
    return out


def _answer_accuracy(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    predictions = [final_number(r["response"]) for r in rows]
    correct = sum(p is not None and answers_match(r["target"], p) for p, r in zip(predictions, rows))
    return {"accuracy": correct / len(rows), "unparsed": sum(p is None for p in predictions)}


def _socratic(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    scores, counts = [], []
    for r in rows:
        references = json.loads(r["target"])
        lines = [line.strip() for line in r["response"].split("\n")]
        if not references:
            continue
        scores.append(max(sentence_bleu(line, references) for line in lines))
        counts.append(min(len(lines), len(references)))
    return {
        "bleu": sum(scores) / len(scores) / 100 if scores else 0.0,
        "avg_questions": sum(counts) / max(1, len(counts)),
    }


def _correctness(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    gold = [r["target"] == "Yes" for r in rows]
    said = [yes_no(r["response"]) for r in rows]
    pred = [(not g) if s is None else s for s, g in zip(said, gold)]  # unparsed counts as wrong
    tp = sum(p and g for p, g in zip(pred, gold))
    fp = sum(p and not g for p, g in zip(pred, gold))
    fn = sum(g and not p for p, g in zip(pred, gold))
    return {
        "f1": _f1(tp, fp, fn),
        "accuracy": sum(p == g for p, g in zip(pred, gold)) / len(rows),
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "unparsed": sum(s is None for s in said),
    }


def _location(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    gold = [int(r["target"]) for r in rows]
    said = [step_number(r["response"]) for r in rows]
    pred = [-1 if s is None else s for s in said]  # -1: a class no gold label has, so unparsed is wrong
    labels = sorted(set(gold) | set(pred))
    per_class = []
    for label in labels:
        tp = sum(p == label and g == label for p, g in zip(pred, gold))
        fp = sum(p == label and g != label for p, g in zip(pred, gold))
        fn = sum(g == label and p != label for p, g in zip(pred, gold))
        per_class.append(_f1(tp, fp, fn))
    correct = sum(p == g for p, g in zip(pred, gold))
    # Single-label multi-class: micro-F1 equals accuracy (every error is one FP and one FN).
    return {
        "f1_micro": correct / len(rows),
        "f1_macro": sum(per_class) / len(per_class),
        "unparsed": sum(s is None for s in said),
    }


def _pedagogy(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"question_match_rate": sum(is_question(r["response"]) for r in rows) / len(rows)}
    scored = [r for r in rows if r.get("win") is not None]
    if scored:
        out["win_rate"] = sum(bool(r["win"]) for r in scored) / len(scored)
        out["win_rate_n"] = len(scored)
    return out


_METRICS: dict[str, Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]] = {
    "problem_solving": _answer_accuracy,
    "socratic_questioning": _socratic,
    "solution_correctness": _correctness,
    "mistake_location": _location,
    "mistake_correction": _answer_accuracy,
    **{task: _pedagogy for task in PEDAGOGY_TASKS},
}
HEADLINE: dict[str, str] = {
    "problem_solving": "accuracy",
    "socratic_questioning": "bleu",
    "solution_correctness": "f1",
    "mistake_location": "f1_micro",
    "mistake_correction": "accuracy",
}


def rm_conversation(context: Mapping[str, Any], response: str, system_prompt: str) -> list[Message]:
    """The pedagogical RM's input: system, problem + reference (user), history, the scored teacher turn."""
    messages: list[Message] = [
        {"role": "system", "content": system_prompt},
        {
            "role": "user",
            "content": f"Problem: {context['problem']}\nReference Solution: {context['reference_solution']}",
        },
    ]
    for turn in context["history"]:
        role = "assistant" if turn["user"] in ("Teacher", "Tutor") else "user"
        messages.append({"role": role, "content": turn["text"]})
    messages.append({"role": "assistant", "content": response})
    return messages


def mtb_markdown(model: str, metrics: Mapping[str, Mapping[str, Any]], rm_label: str | None) -> str:
    """The report: skills table, and the pedagogy tables with each metric named for what it is."""
    lines = [f"# MathTutorBench: {model}", ""]
    core = [t for t in TASKS if t in HEADLINE and t in metrics]
    if core:
        lines += ["| " + " | ".join(f"{TASK_TITLES[t]} ({HEADLINE[t]})" for t in core) + " |"]
        lines += ["|" + "|".join(["---"] * len(core)) + "|"]
        lines += ["| " + " | ".join(_value(metrics[t], HEADLINE[t]) for t in core) + " |", ""]
        lines += [
            "n per task: " + ", ".join(f"{t} {metrics[t]['n']} (flagged {metrics[t]['flagged']})" for t in core),
            "",
        ]
    ped = [t for t in PEDAGOGY_TASKS if t in metrics]
    if ped:
        lines += ["## Pedagogy tasks: WIN RATE (pedagogical reward model vs the human teacher's turn)", ""]
        if rm_label:
            lines += [f"Reward model: {rm_label}.", ""]
            lines += ["| " + " | ".join(f"{TASK_TITLES[t]} win rate" for t in ped) + " |"]
            lines += ["|" + "|".join(["---"] * len(ped)) + "|"]
            lines += ["| " + " | ".join(_value(metrics[t], "win_rate") for t in ped) + " |", ""]
        else:
            lines += [
                (
                    "Not computed: no pedagogical reward model was given (--ped-rm-path). The leaderboard's "
                    "pedagogy columns are win rates; the question-match rates below are NOT comparable to them."
                ),
                "",
            ]
        lines += [
            (
                "## Pedagogy tasks: QUESTION-MATCH RATE (share of generated turns that look like a question; "
                "MathTutorBench's main-script number, NOT a win rate)"
            ),
            "",
        ]
        lines += ["| " + " | ".join(f"{TASK_TITLES[t]} question-match" for t in ped) + " |"]
        lines += ["|" + "|".join(["---"] * len(ped)) + "|"]
        lines += ["| " + " | ".join(_value(metrics[t], "question_match_rate") for t in ped) + " |", ""]
    return "\n".join(lines)


def _value(metrics: Mapping[str, Any], key: str) -> str:
    value = metrics.get(key)
    return "—" if value is None else f"{value:.2f}"
