"""A real OpenAI-compatible chat server on 127.0.0.1, scripted by a Python callable.

Tests, benchmarks and fault drills use it to exercise the HTTP path exactly as a ``vllm serve``
endpoint would be used: real sockets, real JSON, real timeouts. Each request is answered by
``respond(request_json) -> Reply | str``, which can also inject faults: latency, HTTP errors with
Retry-After, malformed or truncated bodies, empty content, dropped connections.

It binds to 127.0.0.1 only and is a test double for an LLM endpoint; recipes never use it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Reply:
    """How the server answers one request.

    Attributes:
        text: the assistant message content (one copy per requested choice unless ``texts``).
        texts: distinct contents per choice (``n`` > 1).
        delay_s: wait before answering (latency, or a timeout when longer than the client's).
        status: HTTP status; non-200 sends an OpenAI-style error body.
        error_message: that body's message (default ``injected HTTP <status>``).
        headers: extra response headers (e.g. ``{"Retry-After": "0.1"}``).
        raw_body: send this body verbatim instead of a completion (malformed/truncated JSON).
        drop_connection: close the socket without answering.
        finish_reason: per choice.
    """

    text: str = ""
    texts: tuple[str, ...] | None = None
    delay_s: float = 0.0
    status: int = 200
    error_message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: str | None = None
    drop_connection: bool = False
    finish_reason: str = "stop"


Responder = Callable[[dict[str, Any]], Reply | str | Awaitable[Reply | str]]


class LocalChatServer:
    """``/v1/chat/completions`` and ``/v1/models`` on 127.0.0.1, in a background thread.

    Use as a context manager; ``base_url`` is ready inside it. ``requests`` and ``headers`` keep
    every request received; ``max_in_flight`` the highest number of requests handled at once.
    """

    def __init__(self, respond: Responder, model: str = "local-test-model", port: int = 0):
        self.respond = respond
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._port = port
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def __enter__(self) -> LocalChatServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="local-chat-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=30):
            raise RuntimeError("local chat server did not start within 30 s")
        if self._error is not None:
            raise RuntimeError(f"local chat server failed to start: {self._error}") from self._error

    def stop(self) -> None:
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        runner = web.AppRunner(app, access_log=None)
        try:
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", self._port)
            loop.run_until_complete(site.start())
            self._port = site._server.sockets[0].getsockname()[1]  # the port the OS picked for 0
        except BaseException as exc:  # reported to start() in the caller's thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            reply = self.respond(body)
            if inspect.isawaitable(reply):
                reply = await reply
            reply = Reply(text=reply) if isinstance(reply, str) else reply
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            return self._answer(request, body, reply)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _answer(self, request: web.Request, body: dict[str, Any], reply: Reply) -> web.StreamResponse:
        if reply.drop_connection:
            if request.transport is not None:
                request.transport.close()
            raise web.HTTPInternalServerError()  # never reaches the closed socket
        if reply.status != 200:
            message = reply.error_message or f"injected HTTP {reply.status}"
            error = {"error": {"message": message, "type": "server_error", "code": reply.status}}
            return web.json_response(error, status=reply.status, headers=reply.headers)
        if reply.raw_body is not None:
            return web.Response(text=reply.raw_body, content_type="application/json", headers=reply.headers)
        n = int(body.get("n", 1) or 1)
        texts = reply.texts if reply.texts is not None else (reply.text,) * n
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        completion = {
            "id": f"chatcmpl-local-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": reply.finish_reason}
                for i, text in enumerate(texts)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": sum(len(t.split()) for t in texts),
                "total_tokens": prompt_tokens + sum(len(t.split()) for t in texts),
            },
        }
        return web.Response(text=json.dumps(completion), content_type="application/json", headers=reply.headers)
