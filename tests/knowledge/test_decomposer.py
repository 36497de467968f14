"""The decomposer: caching, one extraction per problem, retries with the error quoted, fallbacks, HTTP."""

import asyncio
import json
import re

from pearl_verl.dialogue.problem import Problem
from pearl_verl.knowledge.cache import DecompositionCache
from pearl_verl.knowledge.curriculum import load_curriculum
from pearl_verl.knowledge.decompose_once import Decomposer
from pearl_verl.llm import EndpointConfig, LLMCallError, OpenAIChatClient
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.llm.scripted import ScriptedChatBackend

CURRICULUM = load_curriculum()
PROBLEM = Problem(
    "p1",
    "Tom has 3 boxes of 4 apples and eats 2. How many are left?",
    "Tom has 3 * 4 = 12 apples.\nAfter eating 2 he has 12 - 2 = 10 apples.",
    "10",
)
GOOD = json.dumps({"units": ["multiplication", "subtraction"], "steps": [["multiplication"], ["subtraction"]]})


def _replies(*texts):
    queue = list(texts)
    return ScriptedChatBackend(lambda messages, sampling: queue.pop(0))


async def test_llm_extraction_is_cached_on_disk_and_reused(tmp_path):
    backend = _replies(GOOD)
    first = Decomposer(CURRICULUM, backend, "m", DecompositionCache(tmp_path))
    d, calls = await first.decompose(PROBLEM)
    assert calls == 1 and d.source == "llm" and d.extractor == "llm:m:x1"
    assert backend.calls[0][1].temperature == 0.0  # greedy extraction
    assert list(DecompositionCache(tmp_path).keys()) == [d.content_hash]
    again, calls = await first.decompose(PROBLEM)
    assert again is d and calls == 0 and first.stats["memory_hits"] == 1
    second = Decomposer(CURRICULUM, _replies(), "m", DecompositionCache(tmp_path))  # would fail if it called
    from_disk, calls = await second.decompose(PROBLEM)
    assert from_disk == d and calls == 0 and second.stats["disk_hits"] == 1
    other_model = Decomposer(CURRICULUM, _replies(GOOD), "m2", DecompositionCache(tmp_path))
    assert other_model.key(PROBLEM) != first.key(PROBLEM)


async def test_rejected_reply_is_retried_with_the_error_then_accepted():
    backend = _replies('{"units": ["telepathy"], "steps": [[], []]}', GOOD)
    decomposer = Decomposer(CURRICULUM, backend, "m")
    d, calls = await decomposer.decompose(PROBLEM)
    assert calls == 2 and d.source == "llm"
    retry_messages = backend.calls[1][0]
    assert retry_messages[-1]["role"] == "user" and "telepathy" in retry_messages[-1]["content"]
    assert decomposer.stats["parse_failures/unknown_unit"] == 1


async def test_failed_extraction_falls_back_to_rules_and_is_not_cached(tmp_path):
    decomposer = Decomposer(CURRICULUM, _replies("no", "still no"), "m", DecompositionCache(tmp_path))
    d, calls = await decomposer.decompose(PROBLEM)
    assert calls == 2 and d.source == "fallback" and "multiplication" in d.units
    assert decomposer.stats["fallbacks"] == 1 and list(DecompositionCache(tmp_path).keys()) == []
    down = Decomposer(CURRICULUM, ScriptedChatBackend(lambda m, s: LLMCallError("down", "connection", 4)), "m")
    d, calls = await down.decompose(PROBLEM)
    assert d.source == "fallback" and calls == 1 and down.stats["backend_failures"] == 1


async def test_concurrent_requests_share_one_extraction():
    gate = asyncio.Event()

    class Slow:
        calls = 0

        async def chat(self, messages, sampling=None):
            Slow.calls += 1
            await gate.wait()
            return await ScriptedChatBackend(lambda m, s: GOOD).chat(messages, sampling)

    decomposer = Decomposer(CURRICULUM, Slow(), "m")
    tasks = [asyncio.create_task(decomposer.decompose(PROBLEM)) for _ in range(8)]
    await asyncio.sleep(0.01)
    gate.set()
    results = await asyncio.gather(*tasks)
    assert Slow.calls == 1 and len({id(d) for d, _ in results}) == 1
    assert sorted(calls for _, calls in results) == [0] * 7 + [1]


async def test_invalid_cache_file_is_replaced(tmp_path):
    cache = DecompositionCache(tmp_path)
    decomposer = Decomposer(CURRICULUM, None, None, cache)
    path = cache.path(decomposer.key(PROBLEM))
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    d, _ = await decomposer.decompose(PROBLEM)
    assert d.source == "rules" and decomposer.stats["bad_cache_entries"] == 1
    assert json.loads(path.read_text())["content_hash"] == d.content_hash


async def test_extraction_over_http_survives_a_malformed_body():
    replies = [Reply(raw_body='{"choices": [{"message": {"content": '), Reply(text=GOOD)]
    with LocalChatServer(lambda request: replies.pop(0)) as server:
        client = OpenAIChatClient(EndpointConfig(server.base_url, "extractor", backoff_s=0.0, backoff_max_s=0.0))
        d, calls = await Decomposer(CURRICULUM, client, "extractor").decompose(PROBLEM)
        system = server.requests[-1]["messages"][0]["content"]
    assert d.source == "llm" and calls == 1 and client.usage.attempts == 2  # the transport retried once
    assert re.search(r"exactly 2 lists", system)
