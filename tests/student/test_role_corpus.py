"""The student role check measured on labelled replies (issue 31, item 3).

Out of role: what SmolLM2-135M served by llama-cpp-python wrote in the student role, and replies written in
its manner (``fixtures/role_corpus.json``, labelled by hand, each with its source). In role: the corpus's
in-role entries, every student turn of MathDial's test file (read from the data folder, not copied) and the
offline simulator's messages against two scripted tutors. The check sees a message as its callers pass it
(``clean_message`` first) and with no length limit: length and truncation are findings of their own.
"""

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from pearl_verl.dialogue.episode import STUDENT
from pearl_verl.dialogue.episode_runner import EpisodeLimits
from pearl_verl.student.consistency import clean_message, role_issues
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.simulation_runs import make_jobs, run_jobs
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.tutor.scripted import ScriptedSocraticTutor
from pearl_verl.tutor.styles import ScriptedCoachTutor

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = json.loads((FIXTURES / "role_corpus.json").read_text())["entries"]
NO_LIMIT = 10**9


def flagged(text: str) -> bool:
    return bool(role_issues(clean_message(text), NO_LIMIT))


@pytest.fixture(scope="module")
def mathdial_student_turns(data_dir):
    turns = []
    for line in (data_dir / "mathdial" / "test.jsonl").read_text().splitlines():
        row = json.loads(line)
        name = row["student_profile"].split()[0]  # some turns carry the student's name instead of "Student"
        for utterance in row["conversation"].split("|EOM|"):
            speaker, _, text = utterance.strip().partition(":")
            if speaker.strip() in ("Student", name):
                turns.append(text.strip())
    return turns


@pytest.fixture(scope="module")
def offline_messages(gsm8k_items):
    jobs = make_jobs(gsm8k_items[:20], "all", seed=0)  # each problem once per ability band
    messages = []
    for tutor in (ScriptedSocraticTutor(), ScriptedCoachTutor()):
        simulator = build_simulator(StudentConfig(backend="offline"))
        episodes = asyncio.run(run_jobs(simulator, tutor, jobs, EpisodeLimits(8)))
        messages += [turn.text for episode in episodes for turn in episode.turns if turn.role == STUDENT]
    return messages


def test_the_replies_quoted_in_the_issue_are_out_of_role():
    for text in ("I'm the AI assistant.", "The student must ask a question."):
        assert any("breaks the student role" in issue for issue in role_issues(text, 600)), text


def test_recorded_entries_are_the_fixtures_texts_verbatim():
    recorded = [entry for entry in CORPUS if "fixture" in entry]
    assert len(recorded) == 23  # every reply of the two earlier fixtures
    for entry in recorded:
        name, _, where = entry["fixture"].partition("#")
        key, _, index = where.partition("/")
        assert json.loads((FIXTURES / name).read_text())[key][int(index)]["text"] == entry["text"]
        assert entry["source"] == "recorded_smollm2"


def test_students_phrasings_near_the_rules_stay_in_role():
    in_role = [e["text"] for e in CORPUS if e["label"] == "in_role"]
    assert [text for text in in_role if flagged(text)] == []


def test_recall_and_precision_on_the_corpus_mathdial_and_the_offline_simulator(
    mathdial_student_turns, offline_messages
):
    out_of_role = [e for e in CORPUS if e["label"] == "out_of_role"]
    caught = [e for e in out_of_role if flagged(e["text"])]
    missed = [e["text"] for e in out_of_role if e not in caught]
    corpus_in_role_flagged = [e["text"] for e in CORPUS if e["label"] == "in_role" and flagged(e["text"])]
    mathdial_flagged = [text for text in mathdial_student_turns if flagged(text)]
    offline_flagged = [text for text in offline_messages if flagged(text)]
    false_alarms = len(corpus_in_role_flagged) + len(mathdial_flagged) + len(offline_flagged)
    recall = len(caught) / len(out_of_role)
    precision = len(caught) / (len(caught) + false_alarms)
    sizes = Counter((e["source"], e["label"]) for e in CORPUS)
    by_source = Counter(e["source"] for e in caught)
    print(f"corpus by (source, label): {dict(sizes)}")
    print(f"recall(out_of_role) = {len(caught)}/{len(out_of_role)} = {recall:.3f}; caught by source {dict(by_source)}")
    print(f"precision = {len(caught)}/{len(caught) + false_alarms} = {precision:.3f} (all in-role sets pooled)")
    print(f"MathDial student turns flagged: {len(mathdial_flagged)}/{len(mathdial_student_turns)} {mathdial_flagged}")
    print(f"offline simulator messages flagged: {len(offline_flagged)}/{len(offline_messages)}")
    print(f"missed: {missed}")
    assert len(mathdial_student_turns) > 3000 and len(offline_messages) > 500  # the sources were read
    assert recall >= 0.9, missed
    # one MathDial turn is flagged, and rightly: "Is there anything else I can help you with?" (MathDial's
    # students are an LLM playing the student, which slipped there)
    assert len(mathdial_flagged) / len(mathdial_student_turns) <= 0.01, mathdial_flagged
    assert offline_flagged == []
