"""The one way a command starts and stops a child process, and the signals that stop a command.

A child (verl's trainer with its Ray processes, a recipe's ``--dry-run``) runs in a session of its
own, so that stopping it reaches everything it started: every process of that session gets SIGINT
(verl and Ray shut down on it), then SIGTERM, then SIGKILL, each after a grace period. The session, not
the process group: Ray starts each worker (verl's trainer task, its actors, the rollout server) in a
process group of its own, and a worker whose raylet is gone takes a while to notice and exit. That
happens on every way out of the ``with`` block, an exception, and SIGINT (Ctrl-C), SIGTERM, SIGHUP or SIGQUIT to
the command itself: :func:`raise_on_stop_signals` turns those into :class:`Stopped`, so the same ``finally``
runs for a batch scheduler's or ``timeout``'s stop as for an error, and a second signal during the stop is
ignored rather than allowed to cut it short.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
"""One stop for all: Ctrl-C, a batch scheduler's or ``timeout``'s SIGTERM, a closed terminal's SIGHUP and Ctrl-\\
(SIGQUIT, whose default would end the command at once and leave its children running) all unwind the same way."""
STOP_GRACE_S = 5.0
"""How long a child's group has after SIGINT, and again after SIGTERM. Short: verl saves nothing on
either (its checkpoints are what a resumed run starts from), and Ray's actors keep training after
SIGINT (verl's trainer ran six more steps in 30 s of it); SIGTERM ends them."""


class Stopped(SystemExit):
    """The command got a stop signal; exits with 128 + the signal's number, as a shell reports it."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


def raise_on_stop_signals() -> dict[int, Any]:
    """From now on each of :data:`STOP_SIGNALS` raises :class:`Stopped` in the main thread (elsewhere: no change).

    Returns:
        the handlers it replaced, for :func:`restore_signals` (none off the main thread).
    """
    if threading.current_thread() is not threading.main_thread():
        return {}

    stopping: list[int] = []

    def handler(signum: int, _frame: Any) -> None:
        # a second signal while cleaning up must not cut the cleanup or its escalation short; it is ignored here, not
        # by SIG_IGN: one that arrived with the first is already pending, and Python would report it as a race
        if not stopping:
            stopping.append(signum)
            raise Stopped(signum)

    return {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}


def ignore_stop_signals() -> None:
    """Ignore :data:`STOP_SIGNALS` from now on, down to the exit (Python's finalization puts its default handlers back
    for signals with Python handlers: a Ctrl-C there would end the process by SIGINT, not with the stop's code)."""
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def restore_signals(previous: dict[int, Any]) -> None:
    """Put back the handlers :func:`raise_on_stop_signals` replaced (a command run inside another program, as the
    tests run it, leaves that program's Ctrl-C as it found it)."""
    for signum, handler in previous.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


@contextlib.contextmanager
def child_session(command: Sequence[str], grace_s: float = STOP_GRACE_S, **popen: Any) -> Iterator[subprocess.Popen]:
    """``Popen(command, **popen)`` in a new session; on leaving, :func:`stop_session` whatever is left of it."""
    proc = subprocess.Popen(list(command), start_new_session=True, **popen)
    try:
        yield proc
    finally:
        stop_session(proc, grace_s)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def stop_session(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """Stop ``proc``'s session (``proc`` leads it): SIGINT, SIGTERM, SIGKILL, each while something of it is left.

    A leader that already exited may have left processes in its session (Ray's raylet and workers, a
    recipe's ``sleep``): they are stopped the same way. Waits for the leader, so no zombie is left either.
    """
    for signum, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        if not _signal_session(proc.pid, signum):
            break
        if _wait_session(proc, wait_s):
            break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)


def _signal_session(sid: int, signum: int) -> bool:
    """Send ``signum`` once to every process of the session; False when none is left.

    Once: a second SIGINT could cut short the shutdown that the first one started (verl's, Ray's).
    """
    if not os.path.isdir("/proc"):  # no way to list the session: its leader's group is what can be reached
        try:
            os.killpg(sid, signum)
        except (ProcessLookupError, PermissionError):  # no group left, or only zombies in it on some kernels
            return False
        return True
    members = _session_members(sid)
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
    return bool(members)


def _wait_session(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until no process of ``proc``'s session is left; True when that happened within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        proc.poll()  # reap the leader, or it stays in its group as a zombie
        if proc.returncode is not None and not _session_alive(proc.pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def _session_members(sid: int) -> list[int]:
    """The processes, zombies aside, of session ``sid`` or of process group ``sid`` (read from /proc)."""
    members = []
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
        if len(fields) > 3 and fields[0] != "Z" and sid in (int(fields[2]), int(fields[3])):
            members.append(int(entry.name))
    return members


def _session_alive(sid: int) -> bool:
    """Whether a process other than a zombie is left of the session (without /proc: whether its group answers)."""
    if os.path.isdir("/proc"):
        return bool(_session_members(sid))
    try:
        os.killpg(sid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
