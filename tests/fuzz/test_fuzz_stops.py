"""Stop signals at commands at work, in sequences drawn by Hypothesis: the one stop of ``pearl_verl/children.py``.

Each example starts a real ``pearl-verl`` process at work (``plan`` running a recipe that leaves a background job,
``judge`` waiting on a slow judge endpoint), then sends it one to three of SIGINT, SIGTERM, SIGHUP and SIGQUIT, the
later ones during the stop the first started. Properties:

- one ``stopped by`` line, naming the first signal (of two sent at once, the one Python handles first), and the
  exit status 128 + its number;
- no traceback, whatever the later signals and however soon they come;
- nothing of the command's children is left running (the recipe's background job included);
- what the command wrote is whole (every line of judge's results is JSON).

Then each command that runs an event loop (``judge``, ``judge-check``, ``simulate``, ``eval-tutor``) is stopped at
each moment of :data:`MOMENTS` its work has: inside a task's step (before its first request, building the judge
prompt's escape tables, writing a row: a wrapper holds the command there, see :data:`HELD`) and while the loop waits
on a slow endpoint. Its stop line is the last line it writes, whatever the moment: no asyncio report after it.

``PEARL_FUZZ=long`` runs :data:`LONG_EXAMPLES` examples instead of a few.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pearl_verl.children import STOP_SIGNALS
from pearl_verl.llm.local_server import LocalChatServer, Reply

PROBLEMS = Path(__file__).resolve().parents[2] / "pearl_verl/resources/data/gsm8k/test_first50.jsonl"
LONG = os.environ.get("PEARL_FUZZ") == "long"
LONG_EXAMPLES = 40
EXAMPLES = LONG_EXAMPLES if LONG else 3


@pytest.fixture(scope="module")
def slow_judge():
    """A judge endpoint that answers after 30 s: a judge run is at work while it waits."""
    with LocalChatServer(lambda body: Reply(text="{}", delay_s=30), model="judge") as server:
        yield server


@pytest.fixture(scope="module")
def quick_endpoint():
    """An endpoint that answers at once (with ``{}``, which no role can use): the commands go on to their next step."""
    with LocalChatServer(lambda body: "{}", model="judge") as server:
        yield server


def _wait_for(predicate, proc: subprocess.Popen, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=30)
        time.sleep(0.05)


@pytest.mark.parametrize("scenario", ["plan running a recipe", "judge waiting on its endpoint"])
@settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(signals=st.lists(st.sampled_from(STOP_SIGNALS), min_size=1, max_size=3),
       gaps=st.lists(st.floats(0.0, 1.5), min_size=2, max_size=2))
def test_any_sequence_of_stop_signals_gives_one_clean_stop(scenario, signals, gaps, processes_with, slow_judge,
                                                          make_episode):
    marker = f"mark{uuid.uuid4().hex}"
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        if scenario == "plan running a recipe":
            recipe = root / "slow_recipe.sh"
            # a background job (SIGINT ignored, as a non-interactive shell starts it) and a foreground one
            recipe.write_text(f"echo trainer.nnodes=1\n(exec -a {marker}-bg sleep 600) &\n"
                              f"(exec -a {marker} sleep 600)\n")
            command, results = ["plan", "--recipe", str(recipe)], None
        else:
            dialogues, results = root / "in.jsonl", root / "out.jsonl"
            dialogues.write_text(json.dumps({"id": "d0", **make_episode(["help", "What is 3 x 4?", "12"]).to_dict()})
                                 + "\n")
            command = ["judge", str(dialogues), "-o", str(results), "--base-url", slow_judge.base_url,
                       "--model", "judge", "--no-progress"]
        asked = len(slow_judge.requests)
        proc = subprocess.Popen([sys.executable, "-m", "pearl_verl.cli", *command], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "PEARL_TEST_RUN": marker})
        try:
            if results is None:
                _wait_for(lambda: len(processes_with(name=marker)) == 2, proc)
            else:
                _wait_for(lambda: len(slow_judge.requests) > asked, proc)
            for signum, gap in zip(signals, [0.0, *gaps], strict=False):
                time.sleep(gap)
                if proc.poll() is None:
                    proc.send_signal(signum)
            _, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        stops = [line for line in stderr.splitlines() if "stopped by" in line]
        assert len(stops) == 1, (signals, stderr[-2000:])
        named = signal.Signals[stops[0].split("stopped by ")[1].split(";")[0].strip()]
        assert f"pearl-verl {command[0]}: stopped by {named.name}" in stops[0]
        assert proc.returncode == 128 + named, (signals, stderr[-2000:])
        # two signals sent at once are both pending when Python handles them, the lower number first; one sent
        # half a second after the first finds the stop under way
        assert named in signals and (named == signals[0] or gaps[0] < 0.5), (signals, gaps, stderr[-2000:])
        assert "Traceback" not in stderr, (signals, stderr[-3000:])
        assert processes_with(name=marker) == [] and processes_with(env=marker) == [], signals
        if results is not None and results.exists():
            assert all(json.loads(line) for line in results.read_text().splitlines())


HELD = textwrap.dedent('''
    import importlib, inspect, os, sys, time
    from pathlib import Path

    from pearl_verl import cli


    def held(real):
        """``real``, after it touches the file STOP_TEST_MARK names and sleeps: a stop lands inside it."""
        def hold():
            Path(os.environ["STOP_TEST_MARK"]).touch()
            time.sleep(300)

        async def held_coroutine(*args, **kwargs):
            hold()
            return await real(*args, **kwargs)

        def held_function(*args, **kwargs):
            hold()
            return real(*args, **kwargs)

        return held_coroutine if inspect.iscoroutinefunction(real) else held_function


    module, _, path = os.environ["STOP_TEST_HOLD"].partition(":")
    *owners, name = path.split(".")
    owner = importlib.import_module(module)
    for attribute in owners:
        owner = getattr(owner, attribute)
    setattr(owner, name, held(getattr(owner, name)))
    cli.main_exit()
''')
"""``python -c HELD ARGS...`` runs ``pearl-verl ARGS...`` with the function that ``STOP_TEST_HOLD`` names
(``module:attribute``) held at its start, inside whichever task of the event loop calls it."""
WAITING = "waiting on a slow endpoint"
BEFORE_REQUEST = "pearl_verl.llm.client:OpenAIChatClient.chat"
MOMENTS = {
    "judge": {"before its first request": BEFORE_REQUEST, WAITING: None,
              "building the escape tables": "pearl_verl.judge.escape:_build_tables",
              "writing a row": "pearl_verl.judge.batch:json_line"},
    "judge-check": {"before its first request": BEFORE_REQUEST, WAITING: None,
                    "building the escape tables": "pearl_verl.judge.escape:_build_tables"},
    "simulate": {"before its first request": BEFORE_REQUEST, WAITING: None,
                 "writing a row": "pearl_verl.student.turn_output:json_line"},
    "eval-tutor": {"before its first request": BEFORE_REQUEST, WAITING: None,
                   "writing a row": "pearl_verl.eval.runner:json_line"},
}
"""Each async command's moments, and the function a stop lands in (None: the loop is waiting on the endpoint)."""
STOP_CASES = [(command, moment) for command, moments in MOMENTS.items() for moment in moments]


def _async_command(command: str, base_url: str, root: Path, make_episode) -> list[str]:
    """``pearl-verl`` arguments that run ``command`` against the endpoint at ``base_url``, writing under ``root``."""
    endpoint = ["--base-url", base_url, "--model", "judge"]
    if command == "judge":
        dialogues, episode = root / "in.jsonl", make_episode(["help", "What is 3 x 4?", "12"]).to_dict()
        dialogues.write_text("".join(json.dumps({"id": f"d{k}", **episode}) + "\n" for k in range(3)))
        return ["judge", str(dialogues), "--backend", "llm", *endpoint, "-o", str(root / "out.jsonl"), "--no-progress"]
    if command == "judge-check":
        return ["judge-check", "--backend", "llm", *endpoint, "--concurrency", "1", "--max-retries", "0",
                "-o", str(root / "report.json"), "--no-progress"]
    if command == "simulate":
        return ["simulate", str(PROBLEMS), "--limit", "3", "--backend", "llm", *endpoint, "--max-retries", "0",
                "--tutor", "socratic", "--max-turns", "2", "--out", str(root / "turns.jsonl"),
                "--summary", str(root / "summary.json")]
    return ["eval-tutor", str(PROBLEMS), "--limit", "3", "--tutor", f"name=t,base_url={base_url},model=judge",
            "--judge", "offline", "--out", str(root / "run"), "--progress", "off"]


def _stop(args: list[str], hold: str | None, reached, signals: tuple[int, int], mark: Path) -> tuple[int, str]:
    """Start ``pearl-verl ARGS``, held at ``hold`` (None: not held; held, it touches ``mark`` there), wait until it is
    there or ``reached()``, send the first of ``signals`` and the second 0.2 s later (while the stop runs); its exit
    status and stderr."""
    launch = ["-c", HELD] if hold else ["-m", "pearl_verl.cli"]
    proc = subprocess.Popen([sys.executable, *launch, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "STOP_TEST_HOLD": hold or "", "STOP_TEST_MARK": str(mark)})
    try:
        _wait_for(mark.exists if hold else reached, proc)
        proc.send_signal(signals[0])
        time.sleep(0.2)
        if proc.poll() is None:
            proc.send_signal(signals[1])
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr


@pytest.mark.parametrize(("command", "moment"), STOP_CASES, ids=[f"{c}, {m}" for c, m in STOP_CASES])
def test_a_stop_of_an_async_command_is_its_last_line_whatever_the_moment(command, moment, tmp_path, slow_judge,
                                                                         quick_endpoint, make_episode):
    # every signal in turn, and a second one during the stop (ignored): SIGTERM then SIGINT, as a user sends them
    number = STOP_CASES.index((command, moment))
    first, second = STOP_SIGNALS[number % len(STOP_SIGNALS)], STOP_SIGNALS[(number + 1) % len(STOP_SIGNALS)]
    server = slow_judge if moment == WAITING else quick_endpoint
    asked = len(server.requests)
    code, stderr = _stop(_async_command(command, server.base_url, tmp_path, make_episode), MOMENTS[command][moment],
                         lambda: len(server.requests) > asked, (first, second), tmp_path / "reached")
    assert code == 128 + first, stderr[-3000:]
    # nothing after the stop line: no "Task exception was never retrieved", no "Unclosed client session"
    assert stderr.rstrip("\n").splitlines()[-1] == f"pearl-verl {command}: stopped by {first.name}", stderr[-3000:]
    assert "Traceback" not in stderr and "asyncio" not in stderr, stderr[-3000:]


def test_a_stop_before_the_command_is_known_says_so_in_one_line(tmp_path, quick_endpoint, make_episode):
    """Held while the parser is built (the commands' modules imported): the line names the program alone."""
    args = _async_command("judge", quick_endpoint.base_url, tmp_path, make_episode)
    code, stderr = _stop(args, "pearl_verl.cli:build_parser", None, (signal.SIGTERM, signal.SIGINT), tmp_path / "reached")
    assert (code, stderr.splitlines()) == (128 + signal.SIGTERM, ["pearl-verl: stopped by SIGTERM"]), stderr[-3000:]
