"""Stop signals at commands at work, in sequences drawn by Hypothesis: the one stop of ``pearl_verl/children.py``.

Each example starts a real ``pearl-verl`` process at work (``plan`` running a recipe that leaves a background job,
``judge`` waiting on a slow judge endpoint), then sends it one to three of SIGINT, SIGTERM, SIGHUP and SIGQUIT, the
later ones during the stop the first started. Properties:

- one ``stopped by`` line, naming the first signal (of two sent at once, the one Python handles first), and the
  exit status 128 + its number;
- no traceback, whatever the later signals and however soon they come;
- nothing of the command's children is left running (the recipe's background job included);
- what the command wrote is whole (every line of judge's results is JSON).

``PEARL_FUZZ=long`` runs :data:`LONG_EXAMPLES` examples instead of a few.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pearl_verl.children import STOP_SIGNALS
from pearl_verl.llm.local_server import LocalChatServer, Reply

LONG = os.environ.get("PEARL_FUZZ") == "long"
LONG_EXAMPLES = 40
EXAMPLES = LONG_EXAMPLES if LONG else 3


@pytest.fixture(scope="module")
def slow_judge():
    """A judge endpoint that answers after 30 s: a judge run is at work while it waits."""
    with LocalChatServer(lambda body: Reply(text="{}", delay_s=30), model="judge") as server:
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
