"""The LLM judge: bounded parse retries, self-consistency, flagged failures, settings and config."""

import asyncio
import json

import pytest

from pearl_verl.judge.judge_config import JudgeConfig, build_judge, judge_config_from_mapping
from pearl_verl.judge.judge_contract import TutoringJudge
from pearl_verl.judge.llm_judge import LLMJudge
from pearl_verl.judge.offline import HeuristicJudge
from pearl_verl.llm import LLMCallError, OpenAIChatClient, SamplingConfig
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.llm.scripted import ScriptedChatBackend


def _queue(*answers):
    """A script answering each call with the next entry (the last one repeats)."""
    answers = list(answers)

    def script(messages, sampling):
        return answers.pop(0) if len(answers) > 1 else answers[0]

    return script


def _judge(episode, judge):
    return asyncio.run(judge.judge(episode))


def test_parse_failures_are_retried_then_the_valid_answer_is_used(episode, make_output):
    backend = ScriptedChatBackend(_queue("not json", make_output()[:100], make_output({"meta.reflection": 0})))
    judge = LLMJudge(backend, parse_retries=2)
    result = _judge(episode, judge)
    assert result.ok and result.attempts == 3 and result.unparsed == 2 and len(backend.calls) == 3
    assert result.dims["meta"] == pytest.approx(2 / 3)
    assert judge.stats.parse_failures == {"invalid_json": 2} and judge.stats.failed == 0


def test_no_parsable_output_within_the_bound_is_flagged_not_scored(episode, make_output):
    backend = ScriptedChatBackend(_queue(make_output({"acc.statements_correct": 7})))
    judge = LLMJudge(backend, parse_retries=1)
    result = _judge(episode, judge)
    assert not result.ok and result.dims is None and result.gate is None
    assert result.attempts == 2 and result.unparsed == 2 and len(backend.calls) == 2
    assert "not on the scale" in result.error and judge.stats.failure_reasons == {"parse_bad_score": 1}


def test_endpoint_failure_is_flagged_without_parse_retries(episode):
    backend = ScriptedChatBackend(lambda m, s: LLMCallError("down", "timeout", 4))
    judge = LLMJudge(backend, parse_retries=3)
    result = _judge(episode, judge)
    assert not result.ok and "timeout" in result.error and len(backend.calls) == 1
    assert result.attempts == result.unparsed == 0  # down, not weak: nothing came back to parse
    assert judge.stats.failure_reasons == {"llm_timeout": 1}


@pytest.mark.parametrize(("reply", "reason"), [
    (Reply(text=""), "llm_empty_reply"), (Reply(text=" \n"), "llm_empty_reply"),
    (Reply(text="", finish_reason="length"), "parse_truncated"),  # cut off: the token limit's, as before
])
def test_replies_that_all_come_back_empty_are_the_endpoints_failure_named_by_its_url(episode, reply, reason):
    with LocalChatServer(lambda body: reply) as server:
        judge = build_judge(JudgeConfig(base_url=server.base_url, model="pearl-judge", max_retries=0, parse_retries=1))
        result = _judge(episode, judge)
    assert not result.ok and result.reason == reason and result.attempts == result.unparsed == 2
    named = f"judge endpoint failed (empty_reply): every reply from {server.base_url} was empty (2 replies)"
    assert result.error.startswith(named) == (reason == "llm_empty_reply"), result.error


def test_one_reply_with_content_makes_it_the_models_parse_failure(episode):
    judge = LLMJudge(ScriptedChatBackend(_queue("", "not json")), parse_retries=1)
    result = _judge(episode, judge)
    assert not result.ok and result.reason == "parse_invalid_json"
    assert judge.stats.failure_reasons == {"parse_invalid_json": 1}


def test_unexpected_backend_error_is_flagged_and_logged(episode, caplog):
    def broken(messages, sampling):
        raise RuntimeError("bug in a backend")

    result = _judge(episode, LLMJudge(ScriptedChatBackend(broken)))
    assert not result.ok and "RuntimeError: bug in a backend" in result.error
    assert "judge failed unexpectedly" in caplog.text


def test_self_consistency_in_one_request_drops_unparsable_samples(episode, make_output):
    texts = [
        make_output({"leak.final_answer": 0}),
        "garbage",
        make_output({"leak.final_answer": 2}),
        make_output({"leak.final_answer": 2}),
    ]
    backend = ScriptedChatBackend(lambda m, s: texts[: s.n])
    mean = _judge(episode, LLMJudge(backend, samples=4, aggregate="mean"))
    median = _judge(episode, LLMJudge(backend, samples=4, aggregate="median"))
    assert backend.calls[0][1].n == 4 and mean.attempts == 4
    leak_index = [c.criterion for c in mean.criteria].index("final_answer")
    assert mean.criteria[leak_index].score == pytest.approx(2 / 3)
    assert median.criteria[leak_index].score == 1.0


def test_self_consistency_as_separate_requests_with_distinct_seeds(episode, make_output):
    """A request that failed for good leaves a sample missing: it is asked for again, with a new seed."""
    backend = ScriptedChatBackend(_queue(LLMCallError("x", "http_500", 4), make_output(), make_output()))
    judge = LLMJudge(backend, SamplingConfig(temperature=0.3, seed=11), samples=3, samples_per_request=False)
    result = _judge(episode, judge)
    assert result.ok and result.attempts == 3 and len(backend.calls) == 4
    assert sorted(call[1].seed for call in backend.calls) == [11, 12, 13, 14]
    assert all(call[1].n == 1 for call in backend.calls)


def test_retry_rounds_draw_new_seeds(episode, make_output):
    backend = ScriptedChatBackend(_queue("bad", make_output()))
    _judge(episode, LLMJudge(backend, SamplingConfig(seed=5), samples=2))
    assert [call[1].seed for call in backend.calls] == [5, 7]


def test_paper_sampling_reaches_the_server(episode, make_output):
    with LocalChatServer(lambda body: Reply(texts=(make_output(), make_output()))) as server:
        judge = build_judge(JudgeConfig(base_url=server.base_url, model="pearl-judge", samples=2, max_retries=0))
        result = _judge(episode, judge)
    body = server.requests[0]
    assert result.ok and body["model"] == "pearl-judge"
    assert (body["temperature"], body["top_p"], body["top_k"], body["n"], body["max_tokens"]) == (0.3, 1.0, 20, 2, 4096)
    assert judge.usage["calls"] == 1 and judge.usage["prompt_tokens"] > 1000


def test_config_from_reward_kwargs_rejects_unknown_keys_and_bad_values():
    config = judge_config_from_mapping(
        {"base_url": "http://h:8000/v1", "model": "m", "samples": 3, "aggregate": "median"}
    )
    assert config.sampling().n == 3 and config.endpoint().max_concurrency == 32
    with pytest.raises(
        ValueError, match=r"Unknown setting reward.reward_kwargs.base_ur\. Did you mean reward.reward_kwargs.base_url\?"
    ):
        judge_config_from_mapping({"base_ur": "http://h"})
    with pytest.raises(ValueError, match="needs base_url and model"):
        JudgeConfig(backend="llm")
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        JudgeConfig(base_url="http://h/v1", model="m", api_key_env="sk-abc def")
    with pytest.raises(ValueError, match="aggregate='mode'"):
        JudgeConfig(backend="offline", aggregate="mode")
    with pytest.raises(ValueError, match="temperature=-1"):
        JudgeConfig(backend="offline", temperature=-1)
    with pytest.raises(ValueError, match="backend='gpt'"):
        JudgeConfig(backend="gpt")


def test_both_backends_implement_the_protocol(monkeypatch):
    monkeypatch.setenv("PEARL_TEST_JUDGE_KEY", "secret-judge-key")
    llm = build_judge(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="PEARL_TEST_JUDGE_KEY"))
    assert isinstance(llm, LLMJudge) and isinstance(llm.backend, OpenAIChatClient)
    assert isinstance(build_judge(JudgeConfig(backend="offline")), HeuristicJudge)
    assert isinstance(llm, TutoringJudge) and isinstance(HeuristicJudge(), TutoringJudge)
    assert "secret" not in json.dumps(llm.backend.endpoint.__dict__)


def test_a_freed_request_slot_sends_the_next_judgement_before_this_one_is_parsed(episode, make_output, monkeypatch):
    """With one slot, the second request goes out before the first answer is parsed (parsing is off the path)."""
    import pearl_verl.judge.llm_judge as llm_judge_module

    events = []
    attempt, parse = OpenAIChatClient._attempt, llm_judge_module.parse_judgement

    async def logged_attempt(self, *args, **kwargs):
        events.append("request")
        return await attempt(self, *args, **kwargs)

    def logged_parse(*args, **kwargs):
        events.append("parse")
        return parse(*args, **kwargs)

    monkeypatch.setattr(OpenAIChatClient, "_attempt", logged_attempt)
    monkeypatch.setattr(llm_judge_module, "parse_judgement", logged_parse)
    with LocalChatServer(lambda body: Reply(text=make_output())) as server:
        judge = build_judge(JudgeConfig(base_url=server.base_url, model="pearl-judge", max_concurrency=1))

        async def both():
            return await asyncio.gather(judge.judge(episode), judge.judge(episode))

        results = asyncio.run(both())
    assert all(r.ok for r in results)
    assert events == ["request", "request", "parse", "parse"]


def _server_judge(server, samples, parse_retries):
    config = JudgeConfig(
        base_url=server.base_url, model="m", samples=samples, parse_retries=parse_retries, max_retries=0
    )
    return build_judge(config)


def _leak_score(result):
    return next(c.score for c in result.criteria if c.criterion == "final_answer")


def test_a_server_that_ignores_n_is_asked_for_each_sample_apart(episode, make_output, caplog):
    """n=3 answered with one choice (llama-cpp-python's server ignores n): the other two samples go out as
    separate requests at once, later dialogues start that way, and the switch is said once."""
    leaks = iter([0, 2, 2, 1, 1, 1])
    with LocalChatServer(lambda body: Reply(texts=(make_output({"leak.final_answer": next(leaks)}),))) as server:
        judge = _server_judge(server, samples=3, parse_retries=2)
        first, second = _judge(episode, judge), _judge(episode, judge)
    assert [body["n"] for body in server.requests] == [3, 1, 1, 1, 1, 1]
    assert first.ok and first.attempts == 3 and _leak_score(first) == pytest.approx(2 / 3)
    assert second.ok and second.attempts == 3 and _leak_score(second) == pytest.approx(1 / 2)
    assert judge.stats.n_ignored and (judge.stats.samples_requested, judge.stats.samples_received) == (6, 6)
    assert sum("ignores n" in record.getMessage() for record in caplog.records) == 1


def test_a_server_short_of_samples_is_asked_for_the_missing_ones(episode, make_output):
    """Two choices for n=3: the judge asks for the third in the next round and averages all 3."""
    leaks = iter([0, 2, 2])
    with LocalChatServer(lambda body: Reply(texts=tuple(make_output({"leak.final_answer": next(leaks)})
                                                        for _ in range(min(body["n"], 2))))) as server:
        judge = _server_judge(server, samples=3, parse_retries=2)
        result = _judge(episode, judge)
    assert [body["n"] for body in server.requests] == [3, 1]
    assert result.ok and result.attempts == 3 and _leak_score(result) == pytest.approx(2 / 3)
    assert (judge.stats.samples_requested, judge.stats.samples_received, judge.stats.n_ignored) == (4, 3, False)


def test_a_server_still_short_of_samples_flags_the_judgement(episode, make_output):
    """Fewer samples than asked after the retry budget: flagged, never an average of fewer."""
    with LocalChatServer(lambda body: Reply(texts=(make_output(), make_output()))) as server:
        judge = _server_judge(server, samples=3, parse_retries=0)
        result = _judge(episode, judge)
    assert [body["n"] for body in server.requests] == [3]
    assert not result.ok and result.dims is None and result.attempts == 2
    assert "2 of 3 samples" in result.error and judge.stats.failure_reasons == {"samples_short": 1}


def test_extra_choices_are_ignored_not_averaged(episode, make_output):
    """Three choices for n=1: the first is the judgement, the other two are counted and dropped."""
    texts = tuple(make_output({"leak.final_answer": score}) for score in (0, 2, 2))
    with LocalChatServer(lambda body: Reply(texts=texts)) as server:
        judge = _server_judge(server, samples=1, parse_retries=2)
        result = _judge(episode, judge)
    assert len(server.requests) == 1 and server.requests[0]["n"] == 1
    assert result.ok and result.attempts == 1 and _leak_score(result) == 0.0
    assert (judge.stats.samples_received, judge.stats.samples_ignored, judge.stats.samples_parsed) == (3, 2, 1)
