"""The one way to start and stop a child: its whole session goes, on an error and on a stop signal."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from pearl_verl.children import Stopped, child_session, stop_session


def _wait_for(predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_an_error_inside_stops_the_whole_group(processes_with):
    marker = f"mark{uuid.uuid4().hex}"
    # a grandchild in the background, as Ray's raylet under verl's trainer or a sleep under a recipe
    script = f"(exec -a {marker}-1 sleep 300) & exec -a {marker}-2 sleep 301"
    with pytest.raises(RuntimeError, match="an error in the command"), child_session(["bash", "-c", script]):
        _wait_for(lambda: len(processes_with(name=marker)) == 2)
        raise RuntimeError("an error in the command")
    assert processes_with(name=marker) == []


def test_a_grandchild_in_a_process_group_of_its_own_is_stopped_with_the_session(processes_with):
    """Ray starts each worker (verl's trainer task, its actors) in a process group of its own, in the same session."""
    marker = f"mark{uuid.uuid4().hex}"
    # set -m: each background job in a process group of its own
    script = f"set -m; (exec -a {marker}-own-group sleep 300) & echo $!; exec -a {marker} sleep 301"
    with child_session(["bash", "-c", script], stdout=subprocess.PIPE, text=True) as proc:
        background = int(proc.stdout.readline())
        _wait_for(lambda: len(processes_with(name=marker)) == 2)
        assert os.getpgid(background) not in (proc.pid, os.getpgid(0))  # the job really left the leader's group
    assert processes_with(name=marker) == []


def test_a_group_that_ignores_sigint_and_sigterm_is_killed_after_the_grace(processes_with):
    marker = f"mark{uuid.uuid4().hex}"
    script = f"trap '' INT TERM; exec -a {marker} sleep 300"
    with child_session(["bash", "-c", script], grace_s=0.5) as proc:
        _wait_for(lambda: processes_with(name=marker))
    assert proc.returncode == -signal.SIGKILL and processes_with(name=marker) == []


def test_what_a_finished_leader_left_in_its_group_is_stopped(processes_with):
    marker = f"mark{uuid.uuid4().hex}"
    proc = subprocess.Popen(["bash", "-c", f"(exec -a {marker} sleep 300) & exit 0"], start_new_session=True)
    proc.wait()
    _wait_for(lambda: processes_with(name=marker))
    stop_session(proc, grace_s=5)
    assert processes_with(name=marker) == []


COMMAND = textwrap.dedent("""
    import signal, sys, time
    from pearl_verl.children import Stopped, child_session, raise_on_stop_signals
    # a shell without job control starts background jobs with SIGINT ignored (pytest run with &)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raise_on_stop_signals()
    try:
        with child_session(["bash", "-c", "exec -a " + sys.argv[1] + " sleep 300"]):
            print("started", flush=True)
            time.sleep(300)
    except Stopped as exc:
        print(exc, flush=True)
        sys.exit(exc.code)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT], ids=lambda s: s.name)
def test_a_stop_signal_to_the_command_stops_its_children(signum, processes_with):
    marker = f"mark{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", COMMAND, marker], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.stdout.readline().strip() == "started"
    _wait_for(lambda: processes_with(name=marker))
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert processes_with(name=marker) == []
    # one stop for every signal: Ctrl-C and Ctrl-\\ too, no KeyboardInterrupt traceback, no core dump
    assert proc.returncode == 128 + signum and stdout.strip() == f"stopped by {signal.Signals(signum).name}"
    assert "Traceback" not in stderr


def test_a_second_signal_during_the_stop_neither_interrupts_it_nor_skips_its_escalation(processes_with):
    marker = f"mark{uuid.uuid4().hex}"
    # the child ignores SIGINT, so the stop must wait out the grace and go on to SIGTERM
    command = COMMAND.replace('"exec -a " + sys.argv[1] + " sleep 300"',
                              '"trap \'\' INT; exec -a " + sys.argv[1] + " sleep 300"')
    proc = subprocess.Popen([sys.executable, "-c", command, marker], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.stdout.readline().strip() == "started"
    _wait_for(lambda: processes_with(name=marker))
    proc.send_signal(signal.SIGTERM)
    time.sleep(1.5)  # inside the grace after the child's SIGINT
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGQUIT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and stdout.strip() == "stopped by SIGTERM"
    assert "Traceback" not in stderr and processes_with(name=marker) == []


def test_two_signals_that_arrive_together_give_one_stop(processes_with):
    """Both pending when Python runs its handlers: the first one's ``signal.signal`` calls would run the second's
    handler inside the first's, and the stop would name the second."""
    marker = f"mark{uuid.uuid4().hex}"
    pending = ("print('started', flush=True); signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}); "
               "os.kill(os.getpid(), signal.SIGTERM); os.kill(os.getpid(), signal.SIGINT); "
               "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})")
    together = COMMAND.replace('print("started", flush=True)', pending).replace("import signal,", "import os, signal,")
    proc = subprocess.run([sys.executable, "-c", together, marker], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    # Python runs the handlers of pending signals in signal-number order: SIGINT's first
    assert (proc.returncode, proc.stdout.splitlines()) == (128 + signal.SIGINT, ["started", "stopped by SIGINT"])
    assert "Traceback" not in proc.stderr and processes_with(name=marker) == []


def test_stopped_exits_as_a_shell_reports_a_signal():
    exc = Stopped(signal.SIGTERM)
    assert isinstance(exc, SystemExit) and exc.code == 143 and str(exc) == "stopped by SIGTERM"


@pytest.mark.parametrize("command", [["plan"], ["doctor", "--cluster"]], ids=["plan", "doctor"])
def test_sigterm_to_a_command_running_a_recipe_leaves_nothing_of_the_recipe(tmp_path, command, processes_with):
    marker = f"mark{uuid.uuid4().hex}"
    recipe = tmp_path / "slow_recipe.sh"
    recipe.write_text(f"echo trainer.nnodes=1\n(exec -a {marker} sleep 600)\n")
    proc = subprocess.Popen([sys.executable, "-m", "pearl_verl.cli", *command, "--recipe", str(recipe)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: processes_with(name=marker), timeout_s=120)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143 and stderr.strip().endswith(f"{command[0]}: stopped by SIGTERM"), stderr
    assert processes_with(name=marker) == []
