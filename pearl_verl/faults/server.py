"""A local OpenAI-compatible chat server that injects faults at seeded rates (127.0.0.1 only).

:class:`FaultServer` is :class:`pearl_verl.llm.local_server.LocalChatServer` with a
:class:`pearl_verl.faults.plan.FaultPlan` in front of a responder that gives the healthy answer.
Per request the plan picks one outcome and records it:

================  ==========================================================  ===================
kind              the server                                                  the client sees
================  ==========================================================  ===================
timeout           waits ``hold_s`` (past the client's timeout), then answers  timeout, retried
http_429          HTTP 429 with ``Retry-After: retry_after_s``                http_429, retried
http_500          HTTP 500                                                    http_500, retried
reset             TCP reset (SO_LINGER 0) before any byte of the answer       connection, retried
malformed_json    HTTP 200 with an HTML error page as the body                bad_response, retried
truncated_json    HTTP 200, honest Content-Length, the JSON cut in half       bad_response, retried
cut_body          HTTP 200 announcing the full length, closes halfway         connection, retried
empty_content     a well-formed completion whose content is ``""``            success: the caller's
                                                                              parser must reject it
slow_stream       the healthy answer in ``stream_chunks`` pieces, pausing      success, slower
                  ``stream_delay_s`` before each
================  ==========================================================  ===================

It is a test double for a flaky ``vllm serve`` endpoint, for drills and tests; recipes never use it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import socket
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from pearl_verl.faults.plan import FaultConfig, FaultKind, FaultPlan, Injection
from pearl_verl.llm.local_server import LocalChatServer, Reply

HealthyResponder = Callable[[dict[str, Any]], Reply | str | Awaitable[Reply | str]]

MALFORMED_BODY = (
    "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center>"
    "<hr><center>nginx</center></body></html>"
)


@dataclass(frozen=True)
class FaultReply(Reply):
    """A :class:`Reply` carrying the fault to inject into it (None: answer normally)."""

    fault: FaultKind | None = None


class FaultServer(LocalChatServer):
    """``/v1/chat/completions`` on 127.0.0.1 whose answers fail as ``config`` says.

    Args:
        respond: the healthy answer to a request body (text or :class:`Reply`), as for
            :class:`LocalChatServer`; faults are applied on top of it.
        config: rates per fault kind, seed and fault shapes.
        model: the served model name reported by ``/v1/models``.

    ``plan.injections[i]`` describes ``requests[i]``: both are appended in arrival order.
    """

    def __init__(self, respond: HealthyResponder, config: FaultConfig, model: str = "fault-test-model"):
        super().__init__(self._with_fault, model=model)
        self.healthy = respond
        self.config = config
        self.plan = FaultPlan(config)

    @property
    def injections(self) -> list[Injection]:
        return self.plan.injections

    async def _with_fault(self, body: dict[str, Any]) -> FaultReply:
        injection = self.plan.draw(body)
        reply = self.healthy(body)
        if inspect.isawaitable(reply):
            reply = await reply
        reply = Reply(text=reply) if isinstance(reply, str) else reply
        fields = {f.name: getattr(reply, f.name) for f in dataclasses.fields(Reply)}
        if injection.kind is FaultKind.TIMEOUT:
            fields["delay_s"] = max(fields["delay_s"], self.config.hold_s)
        return FaultReply(**fields, fault=injection.kind)

    def _answer(self, request: web.Request, body: dict[str, Any], reply: Reply) -> web.StreamResponse:
        fault = reply.fault if isinstance(reply, FaultReply) else None
        if fault in (None, FaultKind.TIMEOUT):
            return super()._answer(request, body, reply)
        if fault is FaultKind.HTTP_429:
            headers = {**reply.headers, "Retry-After": f"{self.config.retry_after_s:g}"}
            return super()._answer(request, body, dataclasses.replace(reply, status=429, headers=headers))
        if fault is FaultKind.HTTP_500:
            return super()._answer(request, body, dataclasses.replace(reply, status=500))
        if fault is FaultKind.EMPTY_CONTENT:
            return super()._answer(request, body, dataclasses.replace(reply, text="", texts=None))
        if fault is FaultKind.MALFORMED_JSON:
            return web.Response(text=MALFORMED_BODY, content_type="text/html", status=200)
        if fault is FaultKind.RESET:
            return _Reset(request)
        healthy = super()._answer(request, body, reply)
        payload = healthy.body if isinstance(healthy, web.Response) else None
        assert isinstance(payload, bytes), "the base server answers with an in-memory body"
        if fault is FaultKind.TRUNCATED_JSON:
            return web.Response(body=payload[: len(payload) // 2], content_type="application/json")
        if fault is FaultKind.CUT_BODY:
            return _CutBody(request, payload)
        assert fault is FaultKind.SLOW_STREAM, fault
        return _SlowBody(payload, self.config.stream_chunks, self.config.stream_delay_s)


class _Reset(web.StreamResponse):
    """Resets the TCP connection instead of answering."""

    def __init__(self, request: web.Request):
        super().__init__(status=200)
        self._request = request

    async def prepare(self, request: web.BaseRequest) -> None:
        transport = self._request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:  # linger 0: close() sends RST, not FIN
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        raise ConnectionResetError("injected connection reset")  # aiohttp treats it as a gone client


class _CutBody(web.StreamResponse):
    """Announces the whole body's length, sends half of it, and closes the connection."""

    def __init__(self, request: web.Request, payload: bytes):
        super().__init__(status=200, headers={"Content-Type": "application/json"})
        self.content_length = len(payload)
        self._request = request
        self._payload = payload

    async def write_eof(self, data: bytes = b"") -> None:
        await self.write(self._payload[: len(self._payload) // 2])
        if self._request.transport is not None:
            self._request.transport.close()  # FIN after the half already buffered
        raise ConnectionResetError("injected cut body")


class _SlowBody(web.StreamResponse):
    """The complete body in ``chunks`` pieces, waiting ``delay_s`` before each."""

    def __init__(self, payload: bytes, chunks: int, delay_s: float):
        super().__init__(status=200, headers={"Content-Type": "application/json"})
        self.content_length = len(payload)
        size = -(-len(payload) // chunks)
        self._pieces = [payload[i : i + size] for i in range(0, len(payload), size)]
        self._delay_s = delay_s

    async def write_eof(self, data: bytes = b"") -> None:
        for piece in self._pieces:
            await asyncio.sleep(self._delay_s)
            await self.write(piece)
        await super().write_eof()
