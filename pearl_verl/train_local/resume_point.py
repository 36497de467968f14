"""Where ``train-local --resume`` picks RL up: the latest checkpoint whose step's metrics row was logged.

verl saves a step's checkpoint, and points ``latest_checkpointed_iteration.txt`` at it, before that step's
validation and before its file logger writes the step's row. A stop in between leaves a checkpoint whose metrics
exist nowhere: resuming from it would lose the row for good. So the resume goes back to the checkpoint before it
and runs the steps after that one again; verl overwrites each checkpoint when it saves it again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pearl_verl.train_local.run_outputs import read_metrics
from pearl_verl.train_local.verl_run import checkpoint_dir, latest_checkpoint, logged_rows, step_row

_STEP_DIR = re.compile(r"global_step_(\d+)")


@dataclass(frozen=True)
class ResumePoint:
    """``step``: the RL checkpoint to resume (0: none, RL starts from the cold start's hand-over or the model);
    ``latest``: verl's latest checkpoint; ``lost``: ``latest``'s row was never logged and no earlier checkpoint is
    left to run the step again from (``trainer.max_actor_ckpt_to_keep`` removed it), so RL goes on from ``latest``
    without that row."""

    step: int
    latest: int
    lost: bool = False

    def message(self, start_again: str) -> str | None:
        """The line ``--resume`` prints when it does not simply go on from verl's latest checkpoint; ``start_again``
        says what a run with no RL checkpoint starts from."""
        if self.lost:
            return (f"--resume: verl checkpointed step {self.latest} but was stopped before logging it, and no earlier "
                    f"checkpoint is left to run it again from; metrics.jsonl will have no row for step {self.latest}")
        if self.step == self.latest:
            return None
        again = self.step + 1 if self.latest == self.step + 1 else f"{self.step + 1}-{self.latest}"
        where = f"RL goes on from step {self.step}'s checkpoint" if self.step else start_again
        return (f"--resume: verl checkpointed step {self.latest} but was stopped before logging it; {where}, "
                f"running step{'s' * (self.latest > self.step + 1)} {again} again")


def resume_point(out: Path) -> ResumePoint:
    """The checkpoint under ``out/checkpoints`` that ``--resume`` goes on from (see :class:`ResumePoint`)."""
    latest = latest_checkpoint(out)
    logged = _logged_steps(out)
    step = latest
    while step and step not in logged:
        earlier = _previous_checkpoint(out, step)
        if earlier is None:
            return ResumePoint(0, latest)
        if not (checkpoint_dir(out, earlier) / "actor").is_dir():
            return ResumePoint(latest, latest, lost=True)
        step = earlier
    return ResumePoint(step, latest)


def _logged_steps(out: Path) -> set[int]:
    """The training steps with a row: recorded by train-local, or logged by the last launch of verl's trainer."""
    recorded = {row["step"] for row in read_metrics(out / "metrics.jsonl") if row.get("phase") == "train"}
    return recorded | {row["step"] for row in map(step_row, logged_rows(out)) if row is not None}


def _previous_checkpoint(out: Path, step: int) -> int | None:
    """The highest RL step below ``step`` that verl saved a checkpoint of (its dataloader state is written last and
    outlives verl's removal of old checkpoints' weights); None when there is none."""
    saved = [int(match.group(1)) for path in (out / "checkpoints").glob("global_step_*")
             if (match := _STEP_DIR.fullmatch(path.name)) and 0 < int(match.group(1)) < step
             and (path / "data.pt").is_file()]
    return max(saved, default=None)
