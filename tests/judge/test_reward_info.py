"""reward_extra_info of a dialogue: the same keys always; failures flagged, never scored."""

import pytest

from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.judge_contract import JudgeResult
from pearl_verl.judge.reward_info import REWARD_INFO_KEYS, reward_info, reward_score, should_judge

DIMS = {d: 0.5 for d in DIMENSIONS} | {"acc": 0.9}


def _episode(make_episode, end_reason="tutor_ended"):
    """One tutor turn between two student turns, ended by ``end_reason``."""
    return make_episode(["help", "what first?", "4"], end_reason)


def test_scored_dialogue(make_episode):
    info = reward_info(_episode(make_episode), JudgeResult(ok=True, dims=DIMS, gate=1, latency_s=0.2))
    assert tuple(info) == REWARD_INFO_KEYS
    assert info["judge_ok"] == 1 and info["completed"] == 1 and info["tutor_turns"] == 1 and info["acc"] == 0.9
    assert reward_score(info) == pytest.approx((0.9 + 7 * 0.5) / 8)
    assert reward_info(_episode(make_episode), JudgeResult(ok=True, dims=DIMS, gate=0))["completed"] == 0
    cut = reward_info(_episode(make_episode, "turn_limit"), JudgeResult(ok=True, dims=DIMS, gate=1))
    assert cut["completed"] == 0 and cut["judge_ok"] == 1


@pytest.mark.parametrize(("end_reason", "result"), [
    ("tutor_ended", JudgeResult(ok=False, error="parse_malformed")),
    ("tutor_ended", None),
    (None, None),  # no episode
    ("student_error", JudgeResult(ok=True, dims=DIMS, gate=1)),
    ("tutor_error", JudgeResult(ok=True, dims=DIMS, gate=1)),
])
def test_failures_are_flagged_with_the_same_keys(make_episode, end_reason, result):
    info = reward_info(_episode(make_episode, end_reason) if end_reason else None, result)
    assert tuple(info) == REWARD_INFO_KEYS
    assert info["judge_ok"] == 0 and info["completed"] == 0 and reward_score(info) == 0.0
    assert all(info[d] == 0.0 for d in DIMENSIONS)


def test_backend_failures_are_not_judged(make_episode):
    assert should_judge(_episode(make_episode)) and should_judge(_episode(make_episode, "turn_limit"))
    assert not should_judge(_episode(make_episode, "student_error")) and not should_judge(None)


def test_judge_parse_failure_rate_counts_replies_not_dialogues(episode, make_output):
    import asyncio

    from pearl_verl.advantage.metrics import judge_parse_metrics
    from pearl_verl.judge.llm_judge import LLMJudge
    from pearl_verl.llm.scripted import ScriptedChatBackend

    replies = {"weak": ["not json", "{}", make_output()], "strong": [make_output()], "hopeless": ["no"] * 3}
    infos = []
    for answers in replies.values():
        judge = LLMJudge(ScriptedChatBackend(lambda m, s, queue=list(answers): queue.pop(0)), parse_retries=2)
        infos.append(reward_info(episode, asyncio.run(judge.judge(episode))))
    got = [(i["judge_ok"], i["judge_replies"], i["judge_unparsed"]) for i in infos]
    assert got == [(1, 3, 2), (1, 1, 0), (0, 3, 3)]
    assert judge_parse_metrics([*infos, None]) == {"pearl/judge/parse_failure_rate": 5 / 7}
    assert judge_parse_metrics([reward_info(episode, None), None]) == {}  # no reply came back: no rate, not 0


def test_a_failing_endpoints_http_status_is_carried_to_the_step_metrics(episode):
    from pearl_verl.advantage.metrics import judge_parse_metrics

    down = [JudgeResult(ok=False, error="judge endpoint failed (http_401)", reason=f"llm_http_{code}")
            for code in (401, 401, 503)]
    infos = [reward_info(episode, r) for r in down]
    infos.append(reward_info(episode, JudgeResult(ok=False, error="refused", reason="llm_connection")))
    assert [i["judge_http_status"] for i in infos] == [401, 401, 503, 0]
    assert judge_parse_metrics([*infos, None])["pearl/judge/http_status"] == 401.0  # the most frequent
    parse = reward_info(episode, JudgeResult(ok=False, error="x", reason="parse_malformed", attempts=1, unparsed=1))
    assert parse["judge_http_status"] == 0 and "pearl/judge/http_status" not in judge_parse_metrics([parse])
