"""``pearl_judge`` through verl's own ``load_reward_manager`` against a real HTTP judge on 127.0.0.1.

Every fault a judge endpoint shows (malformed JSON, truncated output, missing criteria,
out-of-range scores, HTTP 500, timeouts, a cut body) ends as a parsed score or judge_ok=0 within
the retry bound; nothing crashes, and every sample reports the same keys, so verl can stack them.
"""

import asyncio
import json
import threading
from collections import Counter

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from verl import DataProto
from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
from verl.trainer.ppo.reward import load_reward_manager

from pearl_verl.dialogue.student_contract import StudentTurnState
from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.reward_info import REWARD_INFO_KEYS
from pearl_verl.judge.rubric import RUBRIC
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.verl_plugin.reward_manager import EPISODE_KEY, PearlJudgeRewardManager

MAX_RETRIES, PARSE_RETRIES = 1, 1


def judge_output(overrides=None, drop=()):
    body = {
        d: {
            c.key: {"score": (overrides or {}).get(c.id, c.high), "rationale": f"turn 2 shows {c.key}"}
            for c in RUBRIC.for_dimension(d)
            if c.id not in drop
        }
        for d in DIMENSIONS
    }
    return json.dumps(body)


VALID = judge_output({"leak.final_answer": 1})
SCENARIOS = {
    # name: (replies in order, the last repeating; expected judge_ok)
    "normal": ([Reply(text=VALID)], 1),
    "malformed_once": ([Reply(text="Scores: acc 2, leak 1"), Reply(text=VALID)], 1),
    "malformed_json": ([Reply(text=VALID[:-3] + ",}")], 0),
    "truncated_output": ([Reply(text=VALID[: len(VALID) // 2], finish_reason="length")], 0),
    "truncated_body": ([Reply(raw_body='{"id": "x", "choices": [{"index": 0, "mess')], 0),
    "missing_criteria": ([Reply(text=judge_output(drop={"meta.reflection"}))], 0),
    "out_of_range": ([Reply(text=judge_output({"guide.questioning": 5}))], 0),
    "http_500": ([Reply(status=500)], 0),
    "http_500_once": ([Reply(status=500), Reply(text=VALID)], 1),
    "timeout": ([Reply(text=VALID, delay_s=2.0)], 0),
}
# HTTP faults are retried by the client, parse failures by the judge; their product bounds the calls.
CALL_BOUND = (1 + MAX_RETRIES) * (1 + PARSE_RETRIES)


class ScriptedJudgeServer:
    """Responder keyed by the scenario name the student's opening carries."""

    def __init__(self):
        self.calls = Counter()
        self.lock = threading.Lock()

    def __call__(self, body):
        user = body["messages"][1]["content"]
        name = next(n for n in SCENARIOS if f"scenario {n}." in user)
        with self.lock:
            index = self.calls[name]
            self.calls[name] += 1
        replies = SCENARIOS[name][0]
        return replies[min(index, len(replies) - 1)]


def episode(make_episode, name, end_reason="tutor_ended"):
    """A solved dialogue (conftest's problem) whose opening names its judge scenario."""
    texts = [f"scenario {name}. Can you help?", "What is 3 times 4?", "12, so 10 left", "Well done!"]
    trace = (StudentTurnState(0, ("ask",), "none", {}), StudentTurnState(1, ("answer",), "correct", {}, True))
    return make_episode(texts, end_reason, trace=trace)


def row(extra_fields):
    """A one-row DataProto shaped like the one verl's agent loop sends to the reward loop."""
    prompts, responses = torch.tensor([[5, 6, 7]]), torch.tensor([[8, 9, 0]])
    batch = TensorDict(
        {
            "prompts": prompts,
            "responses": responses,
            "attention_mask": torch.tensor([[1, 1, 1, 1, 1, 0]]),
            "input_ids": torch.cat([prompts, responses], dim=1),
        },
        batch_size=1,
    )
    non_tensors = {
        "data_source": np.array(["gsm8k"]),
        "__num_turns__": np.array([4]),
        "tool_extra_fields": np.array([extra_fields], dtype=object),
    }
    return DataProto(batch=batch, non_tensor_batch=non_tensors)


@pytest.fixture
def manager_for(verl_config):
    def build(**kwargs):
        overrides = [
            "reward.reward_manager.name=pearl_judge",
            *(f"+reward.reward_kwargs.{k}={v}" for k, v in kwargs.items()),
        ]
        return load_reward_manager(
            verl_config(overrides), None, reward_router_address=None, reward_model_tokenizer=None
        )

    return build


def test_registered_under_pearl_judge():
    assert get_reward_manager_cls("pearl_judge") is PearlJudgeRewardManager


def test_every_fault_ends_scored_or_flagged_within_the_bound(manager_for, make_episode):
    server_state = ScriptedJudgeServer()
    with LocalChatServer(server_state) as server:
        manager = manager_for(
            base_url=server.base_url,
            model="pearl-judge",
            max_retries=MAX_RETRIES,
            parse_retries=PARSE_RETRIES,
            timeout_s=0.5,
            max_concurrency=8,
            structured_output="json_schema",  # as the recipes set it; "auto" would probe other modes on a 500
        )
        names = [*SCENARIOS, "no_episode"]
        rows = [
            row({"min_global_steps": 3} if n == "no_episode" else {EPISODE_KEY: episode(make_episode, n).to_dict()})
            for n in names
        ]

        async def score_all():  # concurrently, as verl's RewardLoopWorker.compute_score_batch does
            return await asyncio.gather(*(manager.run_single(r) for r in rows))

        outputs = dict(zip(names, asyncio.run(score_all()), strict=True))
    for name, (_, expected_ok) in SCENARIOS.items():
        info = outputs[name]["reward_extra_info"]
        assert info["judge_ok"] == expected_ok, (name, info)
        assert 1 <= server_state.calls[name] <= CALL_BOUND, (name, server_state.calls[name])
        if expected_ok:
            assert info["leak"] == pytest.approx(5 / 6) and info["completed"] == 1 and info["tutor_turns"] == 2
            assert outputs[name]["reward_score"] == pytest.approx(sum(info[d] for d in DIMENSIONS) / 8)
        else:
            assert outputs[name]["reward_score"] == 0.0 and info["completed"] == 0
            assert all(info[d] == 0.0 for d in DIMENSIONS)
    assert server_state.calls["malformed_json"] == 1 + PARSE_RETRIES
    assert server_state.calls["http_500"] == 1 + MAX_RETRIES and server_state.calls["timeout"] == 1 + MAX_RETRIES
    assert outputs["no_episode"]["reward_extra_info"]["judge_ok"] == 0 and "no_episode" not in server_state.calls
    # Identical keys in every sample: stack them the way verl's RewardLoopManager does.
    infos = [o["reward_extra_info"] for o in outputs.values()]
    assert all(list(i) == list(REWARD_INFO_KEYS) for i in infos)
    columns = {key: np.array([i[key] for i in infos]) for key in infos[0]}
    assert columns["judge_ok"].dtype.kind == "i" and columns["acc"].dtype.kind == "f"
    rm = PearlJudgeRewardManager.assemble_rm_scores(
        DataProto.concat(rows), [o["reward_score"] for o in outputs.values()]
    )
    assert rm.shape == (len(rows), 3) and rm[0, 1] == pytest.approx(outputs["normal"]["reward_score"])


def test_cut_off_episode_is_not_completed_even_if_the_judge_says_so(manager_for, make_episode):
    with LocalChatServer(lambda body: VALID) as server:
        manager = manager_for(base_url=server.base_url, model="m")
        cut_off = episode(make_episode, "normal", end_reason="turn_limit")
        out = asyncio.run(manager.run_single(row({EPISODE_KEY: cut_off.to_dict()})))
    assert out["reward_extra_info"]["judge_ok"] == 1 and out["reward_extra_info"]["completed"] == 0


def test_offline_backend_and_malformed_episode(manager_for, caplog, make_episode):
    manager = manager_for(backend="offline")
    good = asyncio.run(manager.run_single(row({EPISODE_KEY: episode(make_episode, "normal").to_dict()})))
    assert good["reward_extra_info"]["judge_ok"] == 1 and good["reward_extra_info"]["completed"] == 1
    broken = asyncio.run(manager.run_single(row({EPISODE_KEY: {"turns": "nope"}})))
    assert broken["reward_extra_info"]["judge_ok"] == 0 and "malformed 'pearl_episode'" in caplog.text
    missing = asyncio.run(manager.run_single(row({"other": 1})))
    assert missing["reward_extra_info"]["judge_ok"] == 0 and "default_agent_loop=pearl_tutor" in caplog.text
    assert list(good["reward_extra_info"]) == list(broken["reward_extra_info"]) == list(REWARD_INFO_KEYS)


def test_settings_are_validated_at_startup(manager_for):
    with pytest.raises(ValueError, match=r"Unknown setting reward.reward_kwargs.concurrency\. .*Valid keys: \["):
        manager_for(backend="offline", concurrency=8)
    with pytest.raises(ValueError, match="needs base_url and model"):
        manager_for(model="m")
