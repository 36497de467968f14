"""The consistency check against replies a weak served model wrote in the student role (issue 20).

Each rejected reply reached a dialogue before: out of role, the prompt's or the check's own words,
an answer or a calculation under a plan of no attempt, a reply cut at ``max_tokens``. The accepted
ones are what a student of the same plan may say, so the check does not get there by rejecting all.
"""

import asyncio
import json
from pathlib import Path

import pytest

from pearl_verl.dialogue.student_contract import StudentCondition
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.student.baselines import SocraticLMStudentSimulator
from pearl_verl.student.baselines.roleplay import FALLBACK_MESSAGE
from pearl_verl.student.consistency import check_message, role_issues
from pearl_verl.student.planner import Plan
from pearl_verl.student.student_config import StudentConfig

CASES = json.loads((Path(__file__).parent / "fixtures" / "weak_model_replies.json").read_text())
RECORDED = json.loads((Path(__file__).parent / "fixtures" / "smollm2_server_replies.json").read_text())


def _issues(case, problem):
    plan = Plan(case["attempt"], tuple(case["labels"]))
    return role_issues(case["text"], 600, case["finish_reason"]) + check_message(case["text"], plan, problem, 600)


@pytest.mark.parametrize("case", CASES["rejected"], ids=[c["why"] for c in CASES["rejected"]])
def test_each_recorded_fault_is_rejected(case, gsm8k_items):
    assert _issues(case, gsm8k_items[0].problem), case["text"]


@pytest.mark.parametrize("case", CASES["accepted"], ids=[c["text"][:30] for c in CASES["accepted"]])
def test_a_student_of_the_same_plan_passes(case, gsm8k_items):
    assert _issues(case, gsm8k_items[0].problem) == []


@pytest.mark.parametrize("case", RECORDED["rejected"], ids=[c["text"][:30] for c in RECORDED["rejected"]])
def test_each_reply_recorded_from_a_real_server_gets_its_finding(case):
    issues = role_issues(case["text"], 600, case["finish_reason"])
    assert any(case["finding"] in issue for issue in issues), (case["why"], issues)


@pytest.mark.parametrize("case", RECORDED["accepted"], ids=[c["text"][:30] for c in RECORDED["accepted"]])
def test_a_student_like_reply_recorded_from_a_real_server_passes(case):
    assert role_issues(case["text"], 600, case["finish_reason"]) == []


# the faults that need no plan to see: the prompt-only baselines reject them too
PLANLESS = [c for c in CASES["rejected"] if role_issues(c["text"], 600, c["finish_reason"])]


def test_the_planless_faults_are_most_of_the_recorded_ones():
    assert {c["why"] for c in PLANLESS} >= {"out of role", "cut at max_tokens mid-word", "a label identifier leaked"}


@pytest.mark.parametrize("case", PLANLESS, ids=[c["why"] for c in PLANLESS])
def test_a_baseline_student_rejects_them_over_http(case, gsm8k_items):
    problem, condition = gsm8k_items[0].problem, StudentCondition(seed=1)
    with LocalChatServer(lambda request: Reply(text=case["text"], finish_reason=case["finish_reason"])) as server:
        config = StudentConfig(simulator="socraticlm", base_url=server.base_url, model="local-test-model")
        simulator = SocraticLMStudentSimulator(config)

        async def reply():
            session = await simulator.start(problem, condition, 0, simulator.opening(problem, condition))
            return await session.respond("What do you know so far?")

        turn = asyncio.run(reply())
    assert turn.text == FALLBACK_MESSAGE and turn.state.reply_source == "fallback"
    assert turn.state.llm_calls == config.parse_attempts  # asked again before falling back


def test_a_pearl_student_message_cut_at_max_tokens_is_asked_again(gsm8k_items):
    from pearl_verl.student.factory import build_simulator

    cut = {"left": 1}

    def respond(request):
        system = request["messages"][0]["content"]
        if system.startswith("You plan the next turn"):
            return '{"behaviours": ["uncertainty", "help_seeking"], "leave": false}'
        if cut["left"]:
            cut["left"] -= 1
            return Reply(text="I think we need to multi", finish_reason="length")
        return "I'm not sure what to do here, can you help?"

    problem, condition = gsm8k_items[0].problem, StudentCondition(seed=1)
    with LocalChatServer(respond, model="student") as server:
        config = StudentConfig(backend="llm", base_url=server.base_url, model="student", decomposer="rules")
        simulator = build_simulator(config)

        async def reply():
            session = await simulator.start(problem, condition, 0, simulator.opening(problem, condition))
            return await session.respond("What do you know so far?"), session

        turn, session = asyncio.run(reply())
        retry = [r for r in server.requests if "cut off at the token limit" in str(r["messages"][-1])]
    assert "multi" not in turn.text and turn.state.reply_source == "llm"
    assert session.usage["parse_failures/realiser"] == 1 and len(retry) == 1
