"""The learning regression test under each sabotage of ``pearl_sabotage.py``: each must make it fail.

    python bench/learning_sabotage.py                 # sign, sync and mask at once, the test's third seed
    python bench/learning_sabotage.py --kinds sign    # one of them

Each sabotage runs ``tests/verl_plugin/test_main_ppo_learning_on_cpu.py``'s one-seed test (``THIRD_SEED``, marked
``long``) in its own pytest process, all at once (one thread each, as the test's seeds run). A sabotage is caught
when that test fails because the held-out probe reward did not rise or the training reward stayed low; a run that
fails for another reason (a crash) is reported as such, not as caught. Prints one line per sabotage with the held-out
reward from step 0 to the last step and the late training reward.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
TEST = "tests/verl_plugin/test_main_ppo_learning_on_cpu.py::test_held_out_probe_reward_rises_through_main_ppo_in_the_third_seed"
KINDS = ("sign", "sync", "mask")
_CURVE = re.compile(r"held-out probe reward through main_ppo, step 0 -> \d+: \{[^}]*\}\n"
                    r"best training reward of the last \d+ steps: \{[^}]*\}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    args = parser.parse_args()
    start = time.monotonic()
    runs = {}
    for kind in args.kinds:
        env = {**os.environ, "PEARL_SABOTAGE": kind, "VERL_USE_EXTERNAL_MODULES": "pearl_sabotage",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH), os.environ.get("PYTHONPATH", "")]))}
        runs[kind] = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-rA", "-m", "long", "-p", "no:cacheprovider",
                                       TEST], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    caught = True
    for kind, proc in runs.items():
        out, _ = proc.communicate()
        curve = _CURVE.search(out)
        if proc.returncode == 0:
            verdict, caught = "NOT caught: the test passed", False
        elif curve and ("AssertionError: held-out probe reward" in out or "AssertionError: best training reward" in out):
            verdict = "caught: " + ("the held-out reward did not rise" if "AssertionError: held-out" in out
                                    else "the training reward stayed low")
        else:
            verdict, caught = "failed for another reason (see below)", False
        print(f"{kind}: {verdict}; {curve.group(0) if curve else 'no curve'}")
        if "another reason" in verdict:
            print(out[-3000:])
    print(f"{time.monotonic() - start:.0f} s for {len(runs)} sabotaged run(s) at once")
    return 0 if caught else 1


if __name__ == "__main__":
    sys.exit(main())
