"""``run_async``: asyncio.run for the commands, whose stop ends the loop with nothing reported after it.

A stop signal raises :class:`Stopped` wherever the main thread is; these tests raise it where the handler would: inside
a task's step, and (a real signal) while the loop waits. Each ends in the stop, with every task ended, the async
generators closed (the HTTP clients' pools) and no asyncio report left to reach the user once the tasks are collected.
"""

import ast
import asyncio
import gc
import logging
import os
import signal
import threading
from pathlib import Path

import pytest

import pearl_verl
from pearl_verl.async_run import run_async
from pearl_verl.children import Stopped, raise_on_stop_signals, restore_signals


class Work:
    """A command's pieces: a pool closed by its async generator, and tasks that wait until they are cancelled."""

    def __init__(self):
        self.closed = []
        self.ended = []
        self.pools = []  # kept, as the chat client keeps its pool's closer

    async def open_pool(self):
        async def pool():
            try:
                yield
            finally:
                self.closed.append("pool")

        self.pools.append(pool())
        await self.pools[-1].__anext__()

    async def wait(self, name):
        try:
            await asyncio.sleep(3600)
        finally:
            self.ended.append(name)


def _raised(function, *args):
    """What ``function(*args)`` raised (None: nothing)."""
    try:
        function(*args)
    except BaseException as exc:  # noqa: BLE001 - handed to the test (a Stopped is a SystemExit)
        return exc
    return None


def _reports(caplog):
    """What reached the log at WARNING or above, once everything the run left is collected."""
    gc.collect()
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_it_returns_what_the_coroutine_returns_and_raises_what_it_raises():
    async def answer():
        return 42

    async def broken():
        raise ValueError("a bug")

    assert run_async(answer()) == 42
    with pytest.raises(ValueError, match="a bug"):
        run_async(broken())


def test_a_stop_inside_a_tasks_step_is_raised_after_every_task_ended_and_the_pool_closed(caplog):
    work = Work()

    async def stopped_in_its_step():
        await asyncio.sleep(0)
        raise Stopped(signal.SIGTERM)  # where the handler raises it: in the middle of a task's own code

    async def command():
        await work.open_pool()
        await asyncio.gather(stopped_in_its_step(), work.wait("a"), work.wait("b"))

    with pytest.raises(Stopped) as stop:
        run_async(command())
    assert stop.value.signum == signal.SIGTERM
    assert sorted(work.ended) == ["a", "b"] and work.closed == ["pool"]
    # asyncio.run left "Task exception was never retrieved" and "unhandled exception during asyncio.run() shutdown"
    assert _reports(caplog) == []


def test_a_cleanup_that_awaits_what_no_task_is_left_to_give_is_cancelled_again(caplog):
    """The command's task, cancelled, puts into a full queue in its ``finally``: no other task is left to empty it."""
    work, queue = Work(), asyncio.Queue(maxsize=1)

    async def stopped_in_its_step():
        await asyncio.sleep(0)
        raise Stopped(signal.SIGINT)

    async def command():
        await work.open_pool()
        queue.put_nowait("first")
        stopper = asyncio.ensure_future(stopped_in_its_step())
        try:
            await work.wait("command")
        finally:
            await queue.put("end marker")
        await stopper

    ended = []  # in a thread of its own, which a hang leaves behind: the test fails, pytest goes on
    thread = threading.Thread(target=lambda: ended.append(_raised(run_async, command())), daemon=True)
    thread.start()
    thread.join(timeout=60)  # against a hang, not a time bound
    assert [type(exc) for exc in ended] == [Stopped]
    assert queue.qsize() == 1 and work.closed == ["pool"] and _reports(caplog) == []


def test_a_stop_signal_while_the_loop_waits_is_raised_after_the_wind_down(caplog):
    work = Work()
    started = threading.Event()

    async def command():
        await work.open_pool()
        waits = [asyncio.ensure_future(work.wait(name)) for name in ("a", "b")]
        await asyncio.sleep(0)  # both have started to wait: a task cancelled before its first step runs no finally
        started.set()
        await asyncio.gather(*waits)

    handlers = raise_on_stop_signals()
    try:
        threading.Thread(target=lambda: started.wait() and os.kill(os.getpid(), signal.SIGTERM), daemon=True).start()
        with pytest.raises(Stopped) as stop:
            run_async(command())
    finally:
        restore_signals(handlers)
    assert stop.value.signum == signal.SIGTERM
    assert sorted(work.ended) == ["a", "b"] and work.closed == ["pool"] and _reports(caplog) == []


def test_it_refuses_a_running_loop_and_leaves_the_coroutine_unawaited_without_a_warning(recwarn):
    async def inner():
        return 1

    async def outer():
        with pytest.raises(RuntimeError, match="running event loop"):
            run_async(inner())

    asyncio.run(outer())
    gc.collect()
    assert [str(w.message) for w in recwarn if "never awaited" in str(w.message)] == []


def test_every_loop_of_the_package_runs_through_run_async():
    """Where asyncio.run ran a command's loop, a stop left its tasks and pools to be reported after the stop line."""
    package = Path(pearl_verl.__file__).parent
    calls = [f"{path.relative_to(package)}:{node.lineno}" for path in sorted(package.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and ast.unparse(node.func) == "asyncio.run"]
    assert calls == []
