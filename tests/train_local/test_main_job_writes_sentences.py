"""The main job's tutor writes sentences: train-local's defaults (the tiny model, its cold start of 40 SFT steps on the
scripted teachers, the rollout's temperature, the 24-token turn cap), one RL step through verl's main_ppo, and the
held-out tutor turns where RL starts and after the step are complete sentences of words.

The run is the main job cut short: fewer held-out problems and one step, everything that shapes a tutor turn as it
is. The share after 20 steps is measured in docs/training.md (3 seeds); this test keeps a change to the tokenizer,
the cold start, decoding or the turn cap from bringing back broken words unnoticed.
"""

import subprocess
import sys
from pathlib import Path

from pearl_verl.train_local.heldout import read_heldout, tutor_turns

MIN_WELL_FORMED = 0.95


def test_held_out_tutor_turns_of_the_main_jobs_kind_of_run_are_sentences_of_words(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "pearl_verl.cli", "train-local", "--out-dir", str(out), "--steps", "1",
                           "--eval-problems", "4", "--eval-seeds", "1", "--eval-every", "1"],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    evaluations = read_heldout(Path(out) / "heldout.jsonl")
    assert [held.step for _, held in evaluations] == [0, 1]
    for _, held in evaluations:
        turns = [turn for episode in held.episodes for turn in tutor_turns(episode)]
        broken = [text for _, text, ok in turns if not ok]
        assert len(turns) >= 60
        assert 1 - len(broken) / len(turns) >= MIN_WELL_FORMED, (held.step, len(turns), broken)
