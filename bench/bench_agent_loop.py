"""Agent-loop overhead: ``pearl_tutor`` vs verl's own ``tool_agent`` loop, and episode concurrency.

1. Per-turn CPU overhead. Both loops talk to the same instant fake server (a test double for vLLM
   that returns canned token ids) with the offline ChatML tokenizer and verl's Qwen
   continuous-token builder. verl's tool loop: each turn generates a hermes tool call that an
   instant tool answers. Ours: each turn generates a tutor message that an instant fake student
   answers. Time per turn = episode time / turns, median over episodes.
2. Concurrency. N episodes at once against a server and a student that each answer after
   50 ms (asyncio sleeps, as remote endpoints would): wall time vs the ideal
   (turns x (50 ms tutor + 50 ms student)), in one event loop, and 256 episodes split over
   agent-loop worker processes as verl's ``AgentLoopManager`` splits a batch.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from typing import Any

TURNS = 4
LATENCY_S = 0.05


class InstantServer:
    """Test double for verl's server manager: returns fixed tokens after ``latency`` seconds."""

    def __init__(self, token_ids: list[int], latency: float = 0.0):
        self.token_ids, self.latency = token_ids, latency

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, **kwargs: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        if self.latency:
            await asyncio.sleep(self.latency)
        return TokenOutput(token_ids=list(self.token_ids), stop_reason="completed", extra_fields={"global_steps": 0})


class InstantStudent:
    """Test double for the simulator: canned replies after ``latency`` seconds, never concludes."""

    def __init__(self, latency: float = 0.0):
        self.latency = latency

    def opening(self, problem: Any, condition: Any) -> str:
        return f"Hi, can you help me with this? {problem.question}"

    async def start(self, problem: Any, condition: Any, seed: int, opening: str) -> Any:
        return _Session(self.latency)


class _Session:
    def __init__(self, latency: float):
        from pearl_verl.dialogue.student_contract import StudentTurnState

        self.latency = latency
        self._trace = [StudentTurnState(0, ("no_attempt",), "none", {})]

    @property
    def trace(self) -> list:
        return self._trace

    async def respond(self, tutor_message: str) -> Any:
        from pearl_verl.dialogue.student_contract import StudentTurn, StudentTurnState

        if self.latency:
            await asyncio.sleep(self.latency)
        state = StudentTurnState(len(self._trace), ("attempt",), "partial", {"addition": 0.5})
        self._trace.append(state)
        return StudentTurn("I think I need to add 12 and 7, is that 19?", state)


def _setup(tmp: str) -> tuple[Any, Any, Any]:
    import verl
    from hydra import compose, initialize_config_dir

    from pearl_verl.models.tiny import build_offline_tokenizer

    tokenizer = build_offline_tokenizer(tmp)
    config_dir = f"{verl.__path__[0]}/trainer/config"
    overrides = [
        "actor_rollout_ref.rollout.response_length=4096",
        "actor_rollout_ref.rollout.prompt_length=4096",
        "actor_rollout_ref.rollout.multi_turn.format=hermes",
        f"actor_rollout_ref.rollout.multi_turn.max_assistant_turns={TURNS}",
        f"+pearl.agent.max_tutor_turns={TURNS}",
    ]
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose(config_name="ppo_trainer", overrides=overrides)
    from pearl_verl.dialogue.problem import Problem
    from pearl_verl.dialogue.sample import PearlSample
    from pearl_verl.dialogue.student_contract import StudentCondition

    problem = Problem("bench-1", "Ann has 12 pens and buys 7 more. How many now?", "12 + 7 = 19", "19", "gsm8k")
    sample = PearlSample(problem, StudentCondition(), InstantStudent().opening(problem, None))
    return tokenizer, config, sample


def _tool(latency: float = 0.0) -> Any:
    from verl.tools.function_tool import FunctionTool
    from verl.tools.schemas import OpenAIFunctionToolSchema

    schema = OpenAIFunctionToolSchema.model_validate(
        {"type": "function", "function": {"name": "calc", "description": "add", "parameters": {
            "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}
    )

    async def calc(a: int) -> str:
        if latency:
            await asyncio.sleep(latency)
        return f"result {a + 7}"

    return FunctionTool(name="calc", fn=calc, tool_schema=schema, is_async=True)


async def _pearl_episode(config: Any, tokenizer: Any, sample: Any, server: Any, student: Any) -> tuple[float, int]:
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    from pearl_verl.verl_plugin import agent_loop as module

    module.simulator_for = lambda pearl: student  # the benchmark's instant student
    loop = module.PearlTutorAgentLoop(
        trainer_config=DictConfigWrap(config), server_manager=server, tokenizer=tokenizer, processor=None,
        dataset_cls=None, data_config=DictConfigWrap(config.data), hf_model_type="qwen3_moe",
    )
    start = time.perf_counter()
    out = await loop.run({"temperature": 1.0}, raw_prompt=sample.to_prompt(), extra_info=sample.to_extra_info(),
                         uid="u", session_id=0, global_steps=0)
    return time.perf_counter() - start, out.extra_fields["pearl_tutor_turns"]


async def _tool_episode(config: Any, tokenizer: Any, sample: Any, server: Any, latency: float = 0.0) -> tuple[float, int]:
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

    loop = ToolAgentLoop(
        trainer_config=DictConfigWrap(config), server_manager=server, tokenizer=tokenizer, processor=None,
        dataset_cls=None, data_config=DictConfigWrap(config.data), hf_model_type="qwen3_moe",
        tools=ToolListWrap([_tool(latency)]),
    )
    start = time.perf_counter()
    out = await loop.run({"temperature": 1.0}, raw_prompt=sample.to_prompt(), extra_info={})
    return time.perf_counter() - start, out.num_turns // 2  # assistant generations


def per_turn_overhead(episodes: int = 40) -> dict[str, float]:
    """Median seconds per turn of each loop against instant doubles, and their ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer, config, sample = _setup(tmp)
        end = tokenizer.convert_tokens_to_ids("<|im_end|>")
        tutor_ids = tokenizer.encode("What do you get if you add 12 and 7? Check it step by step.", add_special_tokens=False) + [end]
        tool_text = '<tool_call>\n{"name": "calc", "arguments": {"a": 12}}\n</tool_call>'
        tool_ids = tokenizer.encode(tool_text, add_special_tokens=False) + [end]

        async def run_all() -> tuple[list[float], list[float]]:
            ours, theirs = [], []
            for i in range(episodes + 2):  # two warm-up episodes each
                seconds, turns = await _pearl_episode(config, tokenizer, sample, InstantServer(tutor_ids), InstantStudent())
                t_seconds, t_turns = await _tool_episode(config, tokenizer, sample, InstantServer(tool_ids))
                if i >= 2:
                    ours.append(seconds / turns)
                    theirs.append(t_seconds / t_turns)
            return ours, theirs

        ours, theirs = asyncio.run(run_all())
    pearl_ms, verl_ms = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
    return {"pearl_ms_per_turn": pearl_ms, "verl_tool_ms_per_turn": verl_ms, "ratio": pearl_ms / verl_ms}


def _concurrent_runner(kind: str, tokenizer: Any, config: Any, sample: Any) -> Any:
    """``run(n)``: ``n`` concurrent episodes of ``kind`` ("pearl" or "verl") against 50 ms endpoints."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if kind == "pearl":
        tutor_ids = tokenizer.encode("What is your next step?", add_special_tokens=False) + [end]

        async def run(n: int) -> None:
            server, student = InstantServer(tutor_ids, LATENCY_S), InstantStudent(LATENCY_S)
            results = await asyncio.gather(*(_pearl_episode(config, tokenizer, sample, server, student) for _ in range(n)))
            assert all(turns == TURNS for _, turns in results)

        return run
    tool_ids = tokenizer.encode('<tool_call>\n{"name": "calc", "arguments": {"a": 12}}\n</tool_call>', add_special_tokens=False) + [end]

    async def run(n: int) -> None:
        server = InstantServer(tool_ids, LATENCY_S)
        await asyncio.gather(*(_tool_episode(config, tokenizer, sample, server, LATENCY_S) for _ in range(n)))

    return run


KINDS = ("pearl", "verl")
IDEAL_S = {"pearl": TURNS * 2 * LATENCY_S, "verl": (2 * TURNS - 1) * LATENCY_S}
"""Each pearl turn is one 50 ms generation and one 50 ms reply; verl's tool loop ends after its last generation."""


def _summary(episodes: int, walls: dict[str, float]) -> dict[str, float]:
    return {
        "episodes": episodes,
        "pearl_wall_s": walls["pearl"],
        "pearl_ratio": walls["pearl"] / IDEAL_S["pearl"],
        "verl_tool_wall_s": walls["verl"],
        "verl_tool_ratio": walls["verl"] / IDEAL_S["verl"],
        "ideal_s": IDEAL_S["pearl"],
    }


async def _timed(run: Any, episodes: int) -> float:
    start = time.perf_counter()
    await run(episodes)
    return time.perf_counter() - start


def concurrency(episodes: int = 256) -> dict[str, float]:
    """Wall time of ``episodes`` concurrent dialogues in one event loop with 50 ms endpoints vs the ideal.

    verl's tool loop runs the same number of model turns against a 50 ms server and a 50 ms tool.
    """
    walls = {}
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer, config, sample = _setup(tmp)
        for kind in KINDS:
            walls[kind] = asyncio.run(_timed(_concurrent_runner(kind, tokenizer, config, sample), episodes))
    return _summary(episodes, walls)


def _worker(episodes: int, rounds: int, barrier: Any, ends: Any) -> None:
    """Child process: one agent-loop worker (one event loop), as verl's ``AgentLoopWorker`` actor is."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer, config, sample = _setup(tmp)
        loop = asyncio.new_event_loop()
        for kind in KINDS:
            run = _concurrent_runner(kind, tokenizer, config, sample)
            loop.run_until_complete(run(min(episodes, 8)))  # warm-up: first-call caches, lazy imports
            for _ in range(rounds):
                barrier.wait()
                loop.run_until_complete(run(episodes))
                ends.put(time.monotonic())
        loop.close()



def concurrency_workers(episodes: int = 256, workers: int = 8, rounds: int = 3) -> dict[str, float]:
    """``episodes`` concurrent dialogues split over ``workers`` processes, verl's deployment shape.

    verl's ``AgentLoopManager`` chunks a batch over ``rollout.agent.num_workers`` agent-loop
    workers (default 8), each a process with one event loop, so 256 concurrent episodes are 8 x 32
    in a default run. Every round releases all workers at a barrier; wall = the last worker's end
    minus the release. Best round per loop; both loops run in the same worker processes.
    """
    import multiprocessing as mp

    if episodes % workers:
        raise ValueError(f"episodes={episodes} must split evenly over workers={workers}")
    ctx = mp.get_context("spawn")
    barrier, ends = ctx.Barrier(workers + 1), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(episodes // workers, rounds, barrier, ends), daemon=True)
             for _ in range(workers)]
    for proc in procs:
        proc.start()
    best = {}
    try:
        for kind in KINDS:
            walls = []
            for _ in range(rounds):
                barrier.wait(timeout=600)  # the first wait covers the workers' start-up
                start = time.monotonic()
                walls.append(max(ends.get(timeout=120) for _ in range(workers)) - start)
            best[kind] = min(walls)
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    return {**_summary(episodes, best), "workers": workers}
