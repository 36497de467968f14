"""The chat client against a real HTTP server on 127.0.0.1: retries, bounds, limits, counters."""

import asyncio
import time

import pytest

from pearl_verl.llm import EndpointConfig, LLMCallError, OpenAIChatClient, SamplingConfig
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.llm.scripted import ScriptedChatBackend


def _client(server, **overrides):
    settings = dict(base_url=server.base_url, model="m", timeout_s=1.0, max_retries=2, backoff_s=0.01, backoff_max_s=0.05)
    settings.update(overrides)
    return OpenAIChatClient(EndpointConfig(**settings), seed=0)


def _sequence(*replies):
    """A responder that plays ``replies`` in order, repeating the last one."""
    queue = list(replies)

    def respond(body):
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond


def test_success_sends_sampling_and_counts_tokens():
    with LocalChatServer(lambda body: "two words") as server:
        client = _client(server)
        sampling = SamplingConfig(temperature=0.3, top_p=0.9, top_k=20, max_tokens=64, stop=("</s>",))
        result = asyncio.run(client.chat([{"role": "user", "content": "a b c"}], sampling))
    assert result.texts == ("two words",) and result.attempts == 1
    body = server.requests[0]
    assert body["model"] == "m" and body["temperature"] == 0.3 and body["top_p"] == 0.9
    assert body["top_k"] == 20 and body["max_tokens"] == 64 and body["stop"] == ["</s>"]
    usage = client.usage.snapshot()
    assert usage["calls"] == 1 and usage["prompt_tokens"] == 3 and usage["completion_tokens"] == 2
    assert usage["retries"] == 0 and usage["failures"] == 0


def test_transient_errors_are_retried_then_succeed():
    faults = [Reply(status=500), Reply(drop_connection=True), Reply(raw_body='{"choices": [{"ind'), Reply(text="ok")]
    with LocalChatServer(_sequence(*faults)) as server:
        client = _client(server, max_retries=3)
        result = asyncio.run(client.chat([{"role": "user", "content": "x"}]))
    assert result.text == "ok" and result.attempts == 4 and len(server.requests) == 4
    assert client.usage.snapshot()["retries"] == 3


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(status=500), "http_500"),
        (Reply(status=503), "http_503"),
        (Reply(drop_connection=True), "connection"),
        (Reply(raw_body="{not json"), "bad_response"),
        (Reply(raw_body='{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}'), "bad_response"),
        (Reply(delay_s=0.6), "timeout"),
    ],
)
def test_retries_are_bounded(reply, reason):
    with LocalChatServer(lambda body: reply) as server:
        client = _client(server, max_retries=2, timeout_s=0.3)
        with pytest.raises(LLMCallError) as info:
            asyncio.run(client.chat([{"role": "user", "content": "x"}]))
    assert info.value.reason == reason and info.value.attempts == 3
    assert len(server.requests) == 3
    assert client.usage.snapshot()["failure_reasons"] == {reason: 1}


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_configuration_errors_fail_at_once(status):
    with LocalChatServer(lambda body: Reply(status=status)) as server:
        client = _client(server)
        with pytest.raises(LLMCallError, match=f"http_{status}") as info:
            asyncio.run(client.chat([{"role": "user", "content": "x"}]))
    assert info.value.attempts == 1 and len(server.requests) == 1


def test_retry_after_is_honoured_and_capped():
    with LocalChatServer(_sequence(Reply(status=429, headers={"Retry-After": "0.3"}), Reply(text="ok"))) as server:
        client = _client(server, backoff_max_s=1.0)
        start = time.perf_counter()
        assert asyncio.run(client.chat([{"role": "user", "content": "x"}])).text == "ok"
        assert time.perf_counter() - start >= 0.3 and client.usage.backoff_s == 0.3
    with LocalChatServer(_sequence(Reply(status=429, headers={"Retry-After": "30"}), Reply(text="ok"))) as server:
        client = _client(server, backoff_max_s=0.05)
        assert asyncio.run(client.chat([{"role": "user", "content": "x"}])).text == "ok"
        assert client.usage.backoff_s == 0.05  # capped: the server's 30 s is not waited


def test_concurrency_limit_holds():
    with LocalChatServer(lambda body: Reply(text="ok", delay_s=0.05)) as server:
        client = _client(server, max_concurrency=4)

        async def burst():
            return await asyncio.gather(*(client.chat([{"role": "user", "content": str(i)}]) for i in range(24)))

        results = asyncio.run(burst())
    assert len(results) == 24 and server.max_in_flight == 4


def test_several_samples_per_request():
    with LocalChatServer(lambda body: Reply(texts=("a", "b", "c"))) as server:
        result = asyncio.run(_client(server).chat([{"role": "user", "content": "x"}], SamplingConfig(n=3)))
    assert result.texts == ("a", "b", "c") and server.requests[0]["n"] == 3


def test_one_client_serves_several_event_loops():
    with LocalChatServer(lambda body: "ok") as server:
        client = _client(server)
        for _ in range(3):
            assert asyncio.run(client.chat([{"role": "user", "content": "x"}])).text == "ok"
    assert client.usage.calls == 3


def test_api_key_comes_from_the_named_environment_variable(monkeypatch):
    with LocalChatServer(lambda body: "ok") as server:
        monkeypatch.setenv("PEARL_TEST_KEY", "sk-test-123")
        asyncio.run(_client(server, api_key_env="PEARL_TEST_KEY").chat([{"role": "user", "content": "x"}]))
        assert server.headers[0]["Authorization"] == "Bearer sk-test-123"
    monkeypatch.delenv("PEARL_TEST_KEY")
    with pytest.raises(ValueError, match="'PEARL_TEST_KEY' names an environment variable that is not set"):
        OpenAIChatClient(EndpointConfig(base_url="http://127.0.0.1:1/v1", model="m", api_key_env="PEARL_TEST_KEY"))


@pytest.mark.parametrize("status", [401, 500])
def test_a_server_that_echoes_the_key_cannot_bring_it_into_the_error(monkeypatch, status):
    """Every command's endpoint calls go through this client: no error text of it carries the key, whatever its
    shape (this one looks like no key) and wherever the server puts it."""
    key = "plain-words-nobody-would-flag-7"
    monkeypatch.setenv("PEARL_TEST_KEY", key)
    echo = Reply(status=status, error_message=f"bad key {key}; you sent Authorization: Bearer {key} ({key[:12]}...)")
    with LocalChatServer(lambda body: echo) as server, pytest.raises(LLMCallError) as failed:
        asyncio.run(_client(server, api_key_env="PEARL_TEST_KEY", max_retries=1).chat([{"role": "user", "content": "x"}]))
    assert failed.value.reason == f"http_{status}" and key not in str(failed.value)
    assert "bad key <redacted: looks like an API key>" in str(failed.value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "127.0.0.1:8000"}, "must start with http"),
        ({"model": ""}, "model must name"),
        ({"timeout_s": 0}, "timeout_s=0: a finite number greater than 0"),
        ({"max_retries": -1}, "max_retries=-1"),
        ({"max_concurrency": 0}, "max_concurrency=0"),
    ],
)
def test_endpoint_validation(kwargs, match):
    settings = dict(base_url="http://h:1/v1", model="m") | kwargs
    with pytest.raises(ValueError, match=match):
        EndpointConfig(**settings)


def test_sampling_validation():
    with pytest.raises(ValueError, match="top_p=0"):
        SamplingConfig(top_p=0)
    with pytest.raises(ValueError, match="top_k=0"):
        SamplingConfig(top_k=0)


def test_scripted_backend_records_calls_and_failures():
    backend = ScriptedChatBackend(lambda messages, sampling: messages[-1]["content"].upper())
    assert asyncio.run(backend.chat([{"role": "user", "content": "hi"}])).text == "HI"
    failing = ScriptedChatBackend(lambda m, s: LLMCallError("down", "connection", 4))
    with pytest.raises(LLMCallError):
        asyncio.run(failing.chat([{"role": "user", "content": "hi"}]))
    assert backend.calls[0][0] == [{"role": "user", "content": "hi"}]
    assert failing.usage.snapshot()["failures"] == 1 and failing.usage.snapshot()["attempts"] == 4


def test_connection_pool_closes_with_its_event_loop(recwarn):
    import gc

    with LocalChatServer(lambda body: "ok") as server:
        client = _client(server)
        assert asyncio.run(client.chat([{"role": "user", "content": "x"}])).text == "ok"

        async def explicit():
            await client.chat([{"role": "user", "content": "x"}])
            await client.aclose()

        asyncio.run(explicit())
    del client
    gc.collect()
    unclosed = [w for w in recwarn.list if "Unclosed" in str(w.message)]
    assert unclosed == []


def test_a_timed_out_request_is_closed_before_its_retry():
    """The client hangs up on a request it gave up on, so a server (vLLM) can abort the generation;
    the retry arrives after that connection was closed."""
    import socket
    import threading

    events: list[tuple[float, str]] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def handle(conn, n):
        conn.recv(65536)  # the request; never answered
        events.append((time.monotonic(), f"request {n}"))
        conn.settimeout(5)
        try:
            if conn.recv(1) == b"":
                events.append((time.monotonic(), f"closed {n}"))
        except (TimeoutError, ConnectionResetError):
            pass
        conn.close()

    def serve():
        threads = []
        for n in (1, 2):
            conn, _ = listener.accept()
            threads.append(threading.Thread(target=handle, args=(conn, n), daemon=True))
            threads[-1].start()
        for thread in threads:
            thread.join()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    base_url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    endpoint = EndpointConfig(base_url, "m", timeout_s=0.3, max_retries=1, backoff_s=0.01)
    with pytest.raises(LLMCallError) as failed:
        asyncio.run(OpenAIChatClient(endpoint, seed=0).chat([{"role": "user", "content": "hi"}]))
    server.join(timeout=10)
    listener.close()
    assert failed.value.reason == "timeout" and failed.value.attempts == 2
    assert [name for _, name in sorted(events)] == ["request 1", "closed 1", "request 2", "closed 2"]
