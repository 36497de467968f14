"""The student reads meaning, not cue words: a tutor message that is not language moves nothing, in both backends."""

import asyncio
import random
import string

import pytest

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition
from pearl_verl.judge.junk import CUES
from pearl_verl.knowledge.curriculum import load_curriculum
from pearl_verl.knowledge.extract import rule_decomposition
from pearl_verl.llm.scripted import ScriptedChatBackend
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.offline_realiser import PHRASES
from pearl_verl.student.planner import Mind, special_turn
from pearl_verl.student.reading import TutorMove, read_tutor
from pearl_verl.student.simulator import PearlStudentSimulator
from pearl_verl.student.student_config import StudentConfig

CURRICULUM = load_curriculum()
EGGS = Problem(
    "eggs",
    "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. She sells the rest for $2 each. "
    "How much does she make?",
    "Janet sells 16 - 3 - 4 = 9 duck eggs a day.\nShe makes 9 * 2 = $18 every day.",
    "18",
)
DEC = rule_decomposition(EGGS, CURRICULUM)
MID = StudentCondition(CognitiveProfile(2, 2, 2, 2, 2), seed=3)
CONFUSED = ("uncertainty", "help_seeking")


def _letters(rng, words):
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9))) for _ in range(words))


def _junk():
    rng = random.Random(0)
    junk = {"random_letters": _letters(rng, 8), "bare_question_mark": "?"}
    for cue in (*CUES, "try again", "mistake"):
        junk[f"letters_around {cue}"] = f"{_letters(rng, 4)} {cue} {_letters(rng, 4)}"
    junk["broken_characters"] = "Let\ufffds ch\ufffdck th\ufffdt t\ufffdgether? Wh\ufffdt do y\ufffdu g\ufffdt?"
    junk["broken_praise"] = "Go\ufffd\ufffdd j\ufffdb! Th\ufffdt\ufffds r\ufffdght."
    junk["letters_as_latex"] = "\\xqzv \\qwpo Let's check that together? \\plmk \\trzn"
    junk["praise_then_stop"] = "Well done! What do you"  # stopped where no sentence ends
    junk["lets_alone"] = "Let's"
    return junk


JUNK = _junk()


@pytest.mark.parametrize("kind", JUNK)
def test_junk_is_read_as_no_move(kind):
    assert read_tutor(JUNK[kind], EGGS, DEC, CURRICULUM) == TutorMove(legible=False)


def test_the_same_cues_in_real_sentences_still_move_the_student():
    check = read_tutor("Let's check that step together. How did you get 12?", EGGS, DEC, CURRICULUM)
    assert check.legible and check.flags_error and check.asks
    praise = read_tutor("Good job! That's right.", EGGS, DEC, CURRICULUM)
    assert praise.legible and praise.praises and not praise.asks
    reveal = read_tutor(f"The answer is {EGGS.answer}.", EGGS, DEC, CURRICULUM)
    assert reveal.legible and reveal.reveals_answer
    assert read_tutor("Hmm.", EGGS, DEC, CURRICULUM) == TutorMove()  # language that says nothing in particular


def test_math_notation_is_neither_word_nor_junk():
    question = "Can you simplify $\\frac{3}{6}$ first? What is $\\sqrt{16}$ when $x \\geq 0$?"
    assert read_tutor(question, EGGS, DEC, CURRICULUM).asks
    assert read_tutor("$\\frac{1}{2} \\cdot \\sqrt{4}$ ?", EGGS, DEC, CURRICULUM) == TutorMove(legible=False)


def test_a_tutor_quoting_a_math_solution_is_read(math_items):
    for item in math_items[:40]:
        problem = item.problem
        leak = f"The answer is {problem.answer}. Here is the full solution: {problem.reference_solution}"
        move = read_tutor(leak, problem, rule_decomposition(problem, CURRICULUM), CURRICULUM)
        assert move.legible and move.reveals_answer, problem.problem_id


def test_the_students_own_words_count_as_words():
    message = "How many zorbles did you count?"
    assert not read_tutor(message, EGGS, DEC, CURRICULUM).legible
    assert read_tutor(message, EGGS, DEC, CURRICULUM, ["I counted the zorbles."]).asks
    assert read_tutor("Janet's ducks?", EGGS, DEC, CURRICULUM).legible  # the question's names too


def _offline_session(problem):
    simulator = PearlStudentSimulator(StudentConfig())
    return asyncio.run(simulator.start(problem, MID, 0, simulator.opening(problem, MID)))


@pytest.mark.parametrize("kind", JUNK)
def test_an_offline_student_answers_junk_confused_and_learns_nothing(kind, gsm8k_items):
    session = _offline_session(gsm8k_items[0].problem)
    before = session.mastery
    for _ in range(3):
        turn = asyncio.run(session.respond(JUNK[kind]))
        assert turn.state.attempt == "none" and turn.state.intent == CONFUSED
        assert turn.text in PHRASES["confused"] and "?" in turn.text
        assert turn.state.mastery == before and not turn.state.solved and not turn.state.concluded


def test_a_real_message_after_junk_is_read_again(gsm8k_items):
    session = _offline_session(gsm8k_items[0].problem)
    asyncio.run(session.respond(JUNK["random_letters"]))
    turn = asyncio.run(session.respond("Let's check that step together. What do you need to find first?"))
    assert turn.text not in PHRASES["confused"]


def test_after_solving_junk_asks_nothing_so_the_student_wraps_up():
    mind = Mind(mastery={}, solved=True)
    plan = special_turn(mind, TutorMove(legible=False), MID.profile, DEC, random.Random(0), True)
    assert plan.conclude and not plan.confused


def test_the_llm_backend_applies_the_same_rule_without_asking_the_planner(gsm8k_items):
    def reply(messages, sampling):
        system = messages[0]["content"]
        assert not system.startswith("You plan the next turn"), "the planner must not be asked about junk"
        assert "cannot make sense of the tutor's last message" in system
        return "Sorry, what? I don't understand. Can you help?"

    backend = ScriptedChatBackend(reply)
    config = StudentConfig(backend="llm", base_url="http://127.0.0.1:9/v1", model="student", decomposer="rules")
    simulator = build_simulator(config, backend)
    problem = gsm8k_items[0].problem
    session = asyncio.run(simulator.start(problem, MID, 0, simulator.opening(problem, MID)))
    before = session.mastery
    for kind in ("letters_around Let's check that together?", "bare_question_mark", "broken_characters"):
        turn = asyncio.run(session.respond(JUNK[kind]))
        assert turn.state.plan_source == "rules" and turn.state.reply_source == "llm"
        assert turn.state.attempt == "none" and turn.state.intent == CONFUSED and turn.state.llm_calls == 1
        assert turn.state.mastery == before
