"""The ``pearl_tutor`` agent loop: token/mask integrity, stopping, group conditioning, failures.

verl's ``AgentLoopBase`` runs with a fake server manager (a test double for vLLM that returns
scripted token ids) and the offline ChatML tokenizer with verl's Qwen continuous-token builder.
"""

import asyncio
import random

import pytest
from verl.experimental.agent_loop.agent_loop import DictConfigWrap
from verl.workers.rollout.replica import TokenOutput

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition, StudentTurn, StudentTurnState
from pearl_verl.llm import LLMCallError
from pearl_verl.models.tiny import build_offline_tokenizer
from pearl_verl.tutor.tutor_prompts import END_MARKER, tutor_system_prompt
from pearl_verl.verl_plugin import agent_loop as agent_loop_module
from pearl_verl.verl_plugin.agent_loop import PearlTutorAgentLoop, episode_from_extra_fields

WORDS = "let's think what is the next step 12 + 7 = ? I don't know maybe 19 great job try again , . ! ? $ % \n".split(" ")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return build_offline_tokenizer(tmp_path_factory.mktemp("tok"))


def IM_END(tokenizer):
    return tokenizer.convert_tokens_to_ids("<|im_end|>")


def _text(rng, n_words):
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).strip() or "ok"


class FakeServer:
    """Test double for verl's LLM server manager: random tutor text, optional end marker."""

    def __init__(self, tokenizer, rng, end_prob=0.15, fail_at=None):
        self.tokenizer, self.rng, self.end_prob, self.fail_at = tokenizer, rng, end_prob, fail_at
        self.generated = []  # token ids of each generation, as returned
        self.texts = []  # text of each generation (what the template must render)
        self.request_ids = set()

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.request_ids.add(request_id)
        if self.fail_at is not None and len(self.generated) == self.fail_at:
            raise LLMCallError("vllm replica died", "connection", 1)
        text = _text(self.rng, self.rng.randint(1, 12))
        if self.rng.random() < self.end_prob:
            text += " " + END_MARKER
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        ids = ids[: sampling_params["max_tokens"]]  # vLLM stops at max_tokens, without the stop token
        self.generated.append(ids)
        self.texts.append(self.tokenizer.decode(ids, skip_special_tokens=True))
        logprobs = [-self.rng.random() for _ in ids]
        return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed", extra_fields={"global_steps": 3})


class FakeSimulator:
    """Test double for the student simulator: random replies; records what each member got."""

    def __init__(self, rng, conclude_prob=0.2, fail_start=False, fail_respond_at=None):
        self.rng, self.conclude_prob = rng, conclude_prob
        self.fail_start, self.fail_respond_at = fail_start, fail_respond_at
        self.started = []  # (condition, seed)
        self.replies = []

    def opening(self, problem, condition):
        return f"Hi, can you help me? {problem.question}"

    async def start(self, problem, condition, seed, opening):
        if self.fail_start:
            raise LLMCallError("student endpoint down", "connection", 4)
        self.started.append((condition, seed))
        return FakeStudentSession(self, seed)


class FakeStudentSession:
    def __init__(self, simulator, seed):
        self.sim, self.rng = simulator, random.Random(seed)
        self._trace = [StudentTurnState(0, ("help_seeking",), "none", {"u": 0.2})]

    @property
    def trace(self):
        return self._trace

    async def respond(self, tutor_message):
        if self.sim.fail_respond_at is not None and len(self._trace) == self.sim.fail_respond_at:
            raise LLMCallError("student endpoint down", "timeout", 4)
        concluded = self.sim.rng.random() < self.sim.conclude_prob
        text = _text(self.sim.rng, self.sim.rng.randint(1, 10))
        self.sim.replies.append(text)
        state = StudentTurnState(len(self._trace), ("attempt",), "partial", {"u": 0.5}, concluded, concluded, llm_calls=1)
        self._trace.append(state)
        return StudentTurn(text, state)


PROBLEM = Problem("gsm8k-7", "Ann has 12 pens and buys 7 more. How many now?", "12 + 7 = 19 pens.", "19", "gsm8k")
CONDITION = StudentCondition(CognitiveProfile(1, 2, 2, 1, 3), mastery={"addition": 0.3}, seed=11)


def _row(session_id=0):
    sample = PearlSample(PROBLEM, CONDITION, FakeSimulator(random.Random(0)).opening(PROBLEM, CONDITION))
    return {"raw_prompt": sample.to_prompt(), "extra_info": sample.to_extra_info(), "uid": "u-1",
            "session_id": session_id, "global_steps": 3}


_CONFIGS = {}


async def _loop(verl_config, tokenizer, server, simulator, monkeypatch, response_length=256, extra=()):
    monkeypatch.setattr(agent_loop_module, "simulator_for", lambda pearl: simulator)
    key = (response_length, tuple(extra))
    if key not in _CONFIGS:  # composing verl's config takes ~0.3 s; reuse it across loop instances
        _CONFIGS[key] = verl_config([f"actor_rollout_ref.rollout.response_length={response_length}",
                                     "actor_rollout_ref.rollout.prompt_length=2048", "+pearl.agent.max_tutor_turns=6",
                                     *extra])
    cfg = _CONFIGS[key]
    return PearlTutorAgentLoop(
        trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer, processor=None,
        dataset_cls=None, data_config=DictConfigWrap(cfg.data), hf_model_type="qwen3_moe",
    )


def _expected_rendering(tokenizer, server, simulator, opening, response_length):
    messages = [{"role": "system", "content": tutor_system_prompt(PROBLEM)}, {"role": "user", "content": opening}]
    for i, text in enumerate(server.texts):
        messages.append({"role": "assistant", "content": text})
        if i < len(simulator.replies):
            messages.append({"role": "user", "content": simulator.replies[i]})
    ends_with_student = messages[-1]["role"] == "user"
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=ends_with_student)
    return rendered if ends_with_student else rendered[: -len("\n")]


def test_mask_and_tokens_over_many_random_dialogues(verl_config, tokenizer, monkeypatch):
    async def run_all():
        stats = {"truncated": 0, "reasons": set(), "closed_turns": 0}
        for i in range(1000):
            rng = random.Random(i)
            server, simulator = FakeServer(tokenizer, rng), FakeSimulator(rng)
            length = rng.choice([40, 90, 400])  # small budgets force truncation
            cap = rng.choice([None, 6, 15])  # per-turn caps cut turns that then continue
            extra = () if cap is None else (f"+pearl.agent.max_tokens_per_turn={cap}",)
            loop = await _loop(verl_config, tokenizer, server, simulator, monkeypatch, response_length=length, extra=extra)
            out = await loop.run({"temperature": 1.0}, **_row())
            _check_one(out, server, simulator, length, tokenizer, stats)
            stats["closed_turns"] += sum(ids[-1] != IM_END(tokenizer) for ids in server.generated[:-1])
        return stats

    stats = asyncio.run(run_all())
    assert stats["truncated"] > 50 and stats["closed_turns"] > 100
    assert {"tutor_ended", "turn_limit", "token_budget", "student_concluded"} <= stats["reasons"]


def _check_one(out, server, simulator, length, tokenizer, stats):
    record = episode_from_extra_fields(out.extra_fields)
    stats["reasons"].add(record.end_reason)
    full = _expected_rendering(tokenizer, server, simulator, record.turns[0].text, length)
    decoded = tokenizer.decode(out.prompt_ids + out.response_ids, skip_special_tokens=False)
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs) <= length
    if decoded != full:
        stats["truncated"] += 1
        assert full.startswith(decoded) and len(out.response_ids) == length
    # mask 1 exactly on the generated tutor tokens, in order, each generation one contiguous run
    generated = [tok for ids in server.generated for tok in ids][: sum(out.response_mask)]
    assert [t for t, m in zip(out.response_ids, out.response_mask) if m] == generated
    runs = _runs(out.response_mask)
    assert [len(r) for r in runs] == [len(ids) for ids in server.generated][: len(runs)] or decoded != full
    assert all(lp == 0.0 for lp, m in zip(out.response_logprobs, out.response_mask) if not m)
    assert out.extra_fields["pearl_tutor_turns"] == record.tutor_turns == len(server.generated)
    # the offline student writes every reply from its rules and templates: nothing fell back
    assert out.extra_fields["pearl_student_replies"] == len(record.student_trace) - 1
    assert out.extra_fields["pearl_student_fallbacks"] == 0


def _runs(mask):
    runs, current = [], []
    for m in mask:
        if m:
            current.append(m)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


def test_group_members_share_the_condition_and_not_the_seed(verl_config, tokenizer, monkeypatch):
    simulator = FakeSimulator(random.Random(1))

    async def run_group():
        for session in range(8):
            loop = await _loop(verl_config, tokenizer, FakeServer(tokenizer, random.Random(session)), simulator, monkeypatch)
            await loop.run({}, **_row(session_id=session))

    asyncio.run(run_group())
    conditions = [c for c, _ in simulator.started]
    seeds = [s for _, s in simulator.started]
    assert all(c == CONDITION for c in conditions) and len(set(seeds)) == 8


def test_a_dialogues_seed_comes_from_the_run_the_row_and_the_member_never_from_verls_group_id():
    """verl gives each batch a fresh uuid4 group id: a seed built from it would give two runs of one seed other
    dialogues. Two validations pair student for student; a training row meets new draws at another step; a group's
    members, other rows of the problem and other run seeds differ."""
    from pearl_verl.verl_plugin.agent_loop import member_seed

    sample = PearlSample(PROBLEM, CONDITION, "help")

    def seed(split, uid, session, index=4, steps=3, run_seed=0):
        row = {**_row(session), "uid": uid, "global_steps": steps,
               "extra_info": {**sample.to_extra_info(), "split": split, "index": index}}
        return member_seed(sample, row, run_seed)

    held = [[seed("val", f"eval-{k}", session, steps=k) for session in range(4)] for k in range(2)]
    assert held[0] == held[1] and len(set(held[0])) == 4
    assert seed("val", "a", 0, index=5) != seed("val", "a", 0, index=4)  # another row of the same problem
    assert seed("train", "batch-1", 0) == seed("train", "batch-2", 0)  # the same row at the same step
    assert seed("train", "a", 0, steps=3) != seed("train", "a", 0, steps=9)  # met again in a later epoch
    assert seed("val", "a", 0) != seed("train", "a", 0)
    assert seed("val", "a", 0, run_seed=1) != seed("val", "a", 0) and seed("train", "a", 0, run_seed=1) != seed("train", "a", 0)
    # a row without its place in the file falls back to the group id
    assert member_seed(sample, {**_row(0), "uid": "u"}) != member_seed(sample, {**_row(0), "uid": "v"})


def test_each_tutor_turn_asks_for_its_own_seed_and_one_seed_gives_one_dialogue(verl_config, tokenizer, monkeypatch):
    """The seed travels as vLLM's per-request ``seed``: a server that samples by it (vLLM, the hf rollout) gives the
    same dialogue whatever batch a turn lands in."""
    class SeededServer(FakeServer):  # samples from the request's seed only, as a seeded vLLM request does
        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            self.rng = random.Random(sampling_params["seed"])
            return await super().generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params)

    async def dialogue(session, server_rng):
        server = SeededServer(tokenizer, random.Random(server_rng), end_prob=0.0)
        loop = await _loop(verl_config, tokenizer, server, FakeSimulator(random.Random(5), conclude_prob=0.0),
                           monkeypatch, extra=["+pearl.agent.seed_turns=true"])
        row = {**_row(session), "extra_info": {**_row()["extra_info"], "split": "val", "index": 2}}
        await loop.run({"temperature": 1.0}, **row)
        return server.texts

    first, again, other = (asyncio.run(dialogue(s, r)) for s, r in ((0, 1), (0, 2), (1, 1)))
    assert len(first) > 1 and len(set(first)) == len(first)  # a new seed each turn
    assert again == first and other != first


def test_without_seed_turns_no_turn_asks_for_a_seed(verl_config, tokenizer, monkeypatch):
    """Off by default (a seeded request takes vLLM's GPU sampler off FlashInfer): verl's sampling goes as it came."""
    seen = []

    class RecordingServer(FakeServer):
        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            seen.append(dict(sampling_params))
            return await super().generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params)

    async def run():
        loop = await _loop(verl_config, tokenizer, RecordingServer(tokenizer, random.Random(5), end_prob=0.0),
                           FakeSimulator(random.Random(5), conclude_prob=0.0), monkeypatch)
        await loop.run({"temperature": 1.0}, **_row())

    asyncio.run(run())
    assert len(seen) > 1 and all("seed" not in params and params["temperature"] == 1.0 for params in seen)


def test_one_request_id_per_episode_and_budget_passed_as_max_tokens(verl_config, tokenizer, monkeypatch):
    seen = []

    class RecordingServer(FakeServer):
        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            seen.append(sampling_params["max_tokens"])
            return await super().generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params)

    server = RecordingServer(tokenizer, random.Random(5), end_prob=0.0)

    async def run():
        loop = await _loop(verl_config, tokenizer, server, FakeSimulator(random.Random(5), conclude_prob=0.0), monkeypatch,
                           response_length=400, extra=["+pearl.agent.max_tokens_per_turn=30"])
        return await loop.run({"temperature": 1.0}, **_row())

    out = asyncio.run(run())
    assert len(server.request_ids) == 1 and seen[0] == 30 and all(m <= 30 for m in seen)
    assert out.metrics.generate_sequences > 0 and out.metrics.tool_calls > 0


@pytest.mark.parametrize(("sim_kwargs", "server_kwargs", "reason"), [
    ({"fail_start": True}, {}, "student_error"),
    ({"fail_respond_at": 2}, {}, "student_error"),
    ({}, {"fail_at": 1}, "tutor_error"),
])
def test_failures_end_flagged_with_valid_output(verl_config, tokenizer, monkeypatch, sim_kwargs, server_kwargs, reason):
    async def run():
        simulator = FakeSimulator(random.Random(3), conclude_prob=0.0, **sim_kwargs)
        server = FakeServer(tokenizer, random.Random(3), end_prob=0.0, **server_kwargs)
        loop = await _loop(verl_config, tokenizer, server, simulator, monkeypatch)
        return await loop.run({}, **_row())

    out = asyncio.run(run())
    record = episode_from_extra_fields(out.extra_fields)
    assert record.end_reason == reason and out.extra_fields["pearl_ended_normally"] == 0
    assert len(out.response_ids) >= 1 and len(out.response_ids) == len(out.response_mask)
    assert out.extra_fields["min_global_steps"] == 3 == out.extra_fields["max_global_steps"]


def test_over_long_prompt_is_refused_not_truncated(verl_config, tokenizer, monkeypatch):
    async def run():
        loop = await _loop(verl_config, tokenizer, FakeServer(tokenizer, random.Random(0)), FakeSimulator(random.Random(0)),
                           monkeypatch, extra=["actor_rollout_ref.rollout.prompt_length=64"])
        return await loop.run({}, **_row())

    with pytest.raises(ValueError, match=r"more than rollout.prompt_length=64; raise data.max_prompt_length"):
        asyncio.run(run())


def test_rows_without_pearl_info_are_a_clear_error(verl_config, tokenizer, monkeypatch):
    async def run():
        loop = await _loop(verl_config, tokenizer, FakeServer(tokenizer, random.Random(0)), FakeSimulator(random.Random(0)), monkeypatch)
        return await loop.run({}, raw_prompt=[{"role": "user", "content": "hi"}], extra_info={"index": 3})

    with pytest.raises(ValueError, match=r"no extra_info\['pearl'\].*pearl-verl prepare-data"):
        asyncio.run(run())
