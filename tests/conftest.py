"""Shared test settings and factories: every test runs offline (no model or dataset hub is reachable); one way
to build an episode (``build_episode``, the ``make_episode`` fixture) and an MRBench row (``make_mrbench_row``,
``write_mrbench``) for every test, and one way to find a test's processes (``processes_with``)."""

import json
import os
from pathlib import Path

import pytest
from packaging.version import Version

from pearl_verl.dialogue.episode import DialogueTurn, EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition, StudentTurnState
from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.rubric import RUBRIC

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_configure(config):
    # pytest-xdist groups tests by renaming their node ids, which pytest 9.2 ignores (pytest-xdist issue 1386): the
    # serial tests would run two at a time, silently, two runs of verl of up to 14 GB each on a 24 GB machine
    if config.getoption("numprocesses", None) and Version(pytest.__version__) >= Version("9.2"):
        raise pytest.UsageError(f"pytest {pytest.__version__} breaks pytest-xdist's --dist loadgroup, which keeps "
                                "verl's runs one at a time: pip install 'pytest<9.2'")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items):
    """The README runs the suite on two pytest-xdist workers (``-n 2``; ``--dist loadgroup`` is in pyproject.toml).
    The tests marked ``serial`` start verl's trainer, Ray, torchrun or vLLM, which take every core and up to 14 GB:
    they form one group, which one worker runs one test at a time (xdist sends the largest group first) while the
    other runs the rest beside them. Without xdist the mark changes nothing. Each test also records whether it is
    serial as a junit property (``--junitxml``), which ``bench/ci_time.py --junit`` reads."""
    for item in items:
        serial = item.get_closest_marker("serial") is not None
        if serial:
            item.add_marker(pytest.mark.xdist_group("serial"))
        item.user_properties.append(("serial", "yes" if serial else "no"))


PROBLEM = Problem(
    "gsm8k-x",
    "Tom has 3 boxes of 4 apples and eats 2. How many are left?",
    "Tom has 3 * 4 = 12 apples.\nAfter eating 2 he has 12 - 2 = 10 apples.",
    "10",
    "gsm8k",
)


def build_episode(texts=None, end_reason="tutor_ended", problem=PROBLEM, trace=None, condition=None, *,
                  turns=None, attempts=None):
    """An episode from alternating texts (student first), or from ``turns``, (role, text) pairs or
    DialogueTurns where the roles are explicit; the trace defaults to one state per student turn, whose
    attempt outcomes are ``attempts`` (one per student turn; "none" each unless given)."""
    if (texts is None) == (turns is None):
        raise TypeError("build_episode takes texts or turns, one of them")
    if turns is None:
        turns = tuple(DialogueTurn("student" if i % 2 == 0 else "tutor", t) for i, t in enumerate(texts))
    else:
        turns = tuple(t if isinstance(t, DialogueTurn) else DialogueTurn(*t) for t in turns)
    if trace is None:
        n_student = sum(t.role == "student" for t in turns)
        attempts = ("none",) * n_student if attempts is None else tuple(attempts)
        if len(attempts) != n_student:
            raise ValueError(f"{len(attempts)} attempts for {n_student} student turns")
        trace = tuple(StudentTurnState(i, ("answer",), a, {"mult": 0.5}) for i, a in enumerate(attempts))
    elif attempts is not None:
        raise TypeError("build_episode takes attempts or trace, not both")
    return EpisodeRecord(
        problem, condition or StudentCondition(CognitiveProfile(1, 2, 3, 2, 1)), turns, trace, end_reason
    )


@pytest.fixture
def episode():
    return build_episode(
        ["Can you help me?", "What is 3 times 4?", "12", "Good. And after eating 2?", "10", "Well done!"]
    )


@pytest.fixture
def make_episode():
    return build_episode


MATHDIAL_HISTORY = (
    "Tutor: Hi, could you please provide a step-by-step solution for the question below? The question is: "
    f"{PROBLEM.question}\xa0\n\xa0Student: 3 + 4 = 7 apples and 7 - 2 = 5.\xa0\n\xa05"
)
"""An MRBench MathDial-style history: the question in the opening tutor turn, a student's wrong answer last."""
MATHDIAL_SOLUTION = PROBLEM.reference_solution + "\n 10"
"""An MRBench MathDial-style worked solution: the final answer alone on the last line."""


def mrbench_row(responses, split="test", conversation_id="c1", history=MATHDIAL_HISTORY,
                solution=MATHDIAL_SOLUTION, topic="Not Available", data="MathDial"):
    """One MRBench row; ``responses`` is ``{tutor: (text, {dimension: label})}`` (only the labels given)."""
    return {
        "conversation_id": conversation_id,
        "conversation_history": history,
        "Data": data,
        "Split": split,
        "Topic": topic,
        "Ground_Truth_Solution": solution,
        "anno_llm_responses": {tutor: {"response": text, "annotation": labels}
                               for tutor, (text, labels) in responses.items()},
    }


@pytest.fixture
def make_mrbench_row():
    return mrbench_row


@pytest.fixture
def write_mrbench(tmp_path):
    """Writes rows as an MRBench JSON file in tmp_path and returns its path."""

    def write(rows, name="mrbench.json"):
        path = tmp_path / name
        path.write_text(json.dumps(rows), encoding="utf-8")
        return path

    return write


def _live(entry: Path) -> bool:
    return (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"


def find_processes(*, name: str | None = None, env: str | None = None) -> list[str]:
    """The command lines of live (not zombie) processes named ``name...`` (their argv[0], as ``exec -a``
    sets it; a shell's own command line that merely mentions the name does not count) or whose
    environment holds ``env`` (every process a command starts inherits it: verl's, Ray's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit():
                continue
            cmdline = (entry / "cmdline").read_bytes()
            if name is not None and not cmdline.split(b"\0", 1)[0].startswith(name.encode()):
                continue
            if env is not None and env.encode() not in (entry / "environ").read_bytes():
                continue
            if _live(entry):
                found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


@pytest.fixture(name="processes_with")
def processes_with_fixture():
    """:func:`find_processes`, for tests (conftest modules are not importable under importlib mode)."""
    return find_processes


RANKING_JUDGE_LOW = {"The answer is": ("leak", "guide"), "No, that is wrong": ("emotion",), "Continue.": ("guide",)}
"""What the ranking fake judge reads in a dialogue, and the dimensions it then scores lowest: enough to rank the
calibration pairs as a real judge would (pearl_verl.judge.calibration)."""


def ranking_judge_reply(request):
    """A served judge's reply (for :class:`~pearl_verl.llm.local_server.LocalChatServer`): every criterion at its top
    score except the dimensions ``RANKING_JUDGE_LOW`` names for a phrase in the dialogue; "OK" to a request
    without a rubric (a sampling-field check)."""
    if "rubric" not in request["messages"][0]["content"].lower():
        return "OK"
    dialogue = request["messages"][-1]["content"]
    low = {d for text, dims in RANKING_JUDGE_LOW.items() if text in dialogue for d in dims}
    return json.dumps({d: {c.key: {"score": c.scores[0] if d in low else c.high, "rationale": f"turn 3 shows {c.key}"}
                           for c in RUBRIC.for_dimension(d)} for d in DIMENSIONS})


@pytest.fixture
def ranking_judge():
    """:func:`ranking_judge_reply`."""
    return ranking_judge_reply


@pytest.fixture
def ranking_judge_teachers(write_mrbench):
    """Writes an MRBench file of one test conversation whose labels the ranking fake judge agrees with on
    Revealing_of_the_Answer and Tutor_Tone (``agree=False``: Revealing labelled the other way round)."""

    def write(agree=True):
        told, asked = ("Yes (and the answer is correct)", "No") if agree else ("No", "Yes (and the answer is correct)")
        responses = {
            "told": ("The answer is 10.", {"Revealing_of_the_Answer": told}),
            "asked": ("How many apples are in 3 boxes?", {"Revealing_of_the_Answer": asked, "Tutor_Tone": "Encouraging"}),
            "rude": ("No, that is wrong. How many apples are there?",
                     {"Revealing_of_the_Answer": asked, "Tutor_Tone": "Offensive"}),
        }
        return write_mrbench([mrbench_row(responses, split="test")], name=f"teachers-{agree}.json")

    return write
