"""The one way a command runs a coroutine: :func:`run_async`, :func:`asyncio.run` that a stop leaves quiet.

A stop signal raises :class:`~pearl_verl.children.Stopped` wherever the main thread is, so that it stops a command
at once whatever it does; in an event loop that is often inside a task's step (building the judge prompt's escape
tables, parsing a reply, writing a row). asyncio keeps a ``SystemExit`` raised there as the task's exception and also
lets it out of the loop. :func:`asyncio.run` then cancels the other tasks, one of which meets the same exception
again (it awaited the task that holds it) and lets it out of the shutdown too, before the HTTP clients' pools are
closed. What was left behind was reported when it was collected, after the command's "stopped by" line, with a
traceback each: "Task exception was never retrieved", "unhandled exception during asyncio.run() shutdown",
"Unclosed client session".

:func:`run_async` winds the loop down whatever the stop met: it cancels the tasks that are left, in rounds (a task's
cleanup may await again), retrieves their exceptions, notes a stop that a task lets out again and goes on, closes
the async generators (the pools of :class:`~pearl_verl.llm.client.OpenAIChatClient`) and the default executor, and
closes the loop. What the loop reports after a stop goes to the debug log (``-v``): nothing there is the user's to
act on. Then it raises the stop, so the command prints its one line and exits as every command does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from pearl_verl.children import STOP_GRACE_S

logger = logging.getLogger(__name__)

T = TypeVar("T")

LET_OUT = (SystemExit, KeyboardInterrupt)
"""What a task's step lets out of the loop rather than keep (asyncio's rule): a stop (:class:`Stopped` is a
SystemExit), and Ctrl-C where Python's own handler is in place."""
CANCEL_ROUND_S = 0.5
"""How long one round of the wind-down waits before it cancels again what is still pending: a cancelled task's
cleanup may await something that no other task is left to give (a ``put`` into a full queue)."""


class _Ending:
    """The first stop the loop let out; from then on, the loop's reports go to the debug log, not to the user."""

    def __init__(self) -> None:
        self.stop: BaseException | None = None

    def note(self, exc: BaseException) -> None:
        """Keep ``exc`` unless a stop came before it (a task that awaited the stopped one lets out the same)."""
        if self.stop is None:
            self.stop = exc

    def report(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The loop's exception handler: asyncio's own until a stop; after it, the debug log (a task that held the
        stop, a pool whose closing it cut short, reported when they are collected, after the stop line)."""
        if self.stop is None:
            loop.default_exception_handler(context)
            return
        logger.debug("after the stop: %s", context.get("message"), exc_info=context.get("exception"))


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` in a new event loop, as :func:`asyncio.run` does, and wind the loop down quietly on a stop.

    Args:
        main: the command's coroutine.

    Returns:
        what ``main`` returned.

    Raises:
        Stopped: a stop signal came (KeyboardInterrupt: Ctrl-C under Python's own handler), raised once the loop's
            tasks are done and the loop is closed, whatever ``main`` raised meanwhile.
        RuntimeError: called from a running event loop (await the coroutine there instead).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        main.close()  # never started: no "coroutine was never awaited" warning
        raise RuntimeError("run_async() was called from a running event loop; await the coroutine there instead.")
    ending = _Ending()
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(ending.report)
    task: asyncio.Task[T] | None = None
    try:
        asyncio.set_event_loop(loop)
        task = loop.create_task(main)
        loop.run_until_complete(task)
    except LET_OUT as exc:
        ending.note(exc)
        if task is not None and task.done() and not task.cancelled():
            task.exception()  # retrieved: the stop landed in its own step, and asyncio kept it there too
    finally:
        _wind_down(loop, ending, main if task is None else None)
        if ending.stop is not None:  # a stop wins over what the command raised as it was cut short
            raise ending.stop
    assert task is not None
    return task.result()


def _wind_down(loop: asyncio.AbstractEventLoop, ending: _Ending, unstarted: Coroutine[Any, Any, Any] | None) -> None:
    """Cancel the loop's tasks that are left, close its async generators and default executor, then the loop.

    A stop that a step lets out is noted and the wind-down goes on; one that lands between the steps is noted and
    ends it (the loop is closed all the same, and what it would report goes to the debug log). ``unstarted``: the
    command's coroutine when a stop came before its task was made, closed unrun (no "never awaited" warning).
    """
    try:
        if unstarted is not None:
            unstarted.close()
        _cancel_left(loop, ending)
        _run(loop, ending, loop.shutdown_asyncgens())
        _run(loop, ending, loop.shutdown_default_executor())
        _cancel_left(loop, ending)  # what a stop during those two steps left pending
    except LET_OUT as exc:
        ending.note(exc)
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _cancel_left(loop: asyncio.AbstractEventLoop, ending: _Ending) -> None:
    """Cancel the loop's pending tasks and wait for them, again each :data:`CANCEL_ROUND_S` for what is still
    pending, for up to :data:`~pearl_verl.children.STOP_GRACE_S` (a task still pending then is left to the loop's
    close). Each one's exception is retrieved; without a stop, one other than a cancellation is reported as
    :func:`asyncio.run` reports it."""
    deadline = time.monotonic() + STOP_GRACE_S
    while (left := asyncio.all_tasks(loop)) and time.monotonic() < deadline:
        for task in left:
            task.cancel()
        _run(loop, ending, asyncio.wait(left, timeout=CANCEL_ROUND_S))
        for task in left:
            error = task.exception() if task.done() and not task.cancelled() else None
            if error is not None and ending.stop is None:
                loop.call_exception_handler({"message": "unhandled exception during asyncio.run() shutdown",
                                             "exception": error, "task": task})


def _run(loop: asyncio.AbstractEventLoop, ending: _Ending, step: Awaitable[Any]) -> None:
    """``loop.run_until_complete(step)``, noting a stop that a task lets out as it ends (it awaited one that held
    the stop) or that a signal raises meanwhile."""
    try:
        loop.run_until_complete(step)
    except LET_OUT as exc:
        ending.note(exc)
