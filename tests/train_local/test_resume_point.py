"""What ``train-local --resume`` goes on from, decided from a stopped run's files alone: verl's checkpoints, its step
marker, the rows train-local recorded and the rows verl's last launch logged."""

import json

import pytest

from pearl_verl.train_local.resume_point import ResumePoint, resume_point

START_AGAIN = "RL starts again from the cold start's"


def _stopped_run(out, *, latest, saved=(), removed=(), recorded=(), logged=()):
    """A run folder as a stop leaves it: checkpoints of the ``saved`` steps (``removed``: their weights deleted by
    verl's rotation, the dataloader state left), verl's marker at ``latest``, train rows ``recorded`` by train-local
    and ``logged`` by verl's last launch."""
    for step in (*saved, *removed):
        folder = out / "checkpoints" / f"global_step_{step}"
        folder.mkdir(parents=True)
        (folder / "data.pt").write_bytes(b"")
        if step in saved:
            (folder / "actor").mkdir()
    if latest:
        (out / "checkpoints" / "latest_checkpointed_iteration.txt").write_text(str(latest))
    (out / "metrics.jsonl").write_text("".join(
        json.dumps(row) + "\n" for row in [{"step": 0, "phase": "cold_start"},
                                          *({"step": s, "phase": "train", "reward/mean": 0.5} for s in recorded)]))
    (out / "verl_metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "data": {"pearl/reward/acc/mean": 0.5}}) + "\n" for s in logged))
    return out


@pytest.mark.parametrize(("stop", "run", "expected", "message"), [
    ("before RL's first checkpoint", dict(latest=0, recorded=(1,)), ResumePoint(0, 0), None),
    ("between steps", dict(latest=2, saved=(2,), recorded=(1, 2)), ResumePoint(2, 2), None),
    ("after verl logged step 2, before train-local recorded it",
     dict(latest=2, saved=(2,), recorded=(1,), logged=(1, 2)), ResumePoint(2, 2), None),
    ("in step 4, after its checkpoint, before its row", dict(latest=4, saved=(2, 4), recorded=(1, 2, 3)),
     ResumePoint(2, 4),
     "--resume: verl checkpointed step 4 but was stopped before logging it; RL goes on from step 2's checkpoint, "
     "running steps 3-4 again"),
    ("the same, step 3's row logged by verl only", dict(latest=4, saved=(2, 4), recorded=(1, 2), logged=(3,)),
     ResumePoint(2, 4), None),
    ("in step 3 of 3, saved every step", dict(latest=3, saved=(1, 2, 3), recorded=(1, 2)), ResumePoint(2, 3),
     "--resume: verl checkpointed step 3 but was stopped before logging it; RL goes on from step 2's checkpoint, "
     "running step 3 again"),
    ("in step 2, RL's first checkpoint", dict(latest=2, saved=(2,), recorded=(1,)), ResumePoint(0, 2),
     f"--resume: verl checkpointed step 2 but was stopped before logging it; {START_AGAIN}, running steps 1-2 again"),
    # a stop in a run that had already gone back: verl's marker still names the old step 6, whose checkpoint and
    # step 4's are from before the first stop; rows after step 2 were dropped then, and only step 3 ran again
    ("again, after going back from step 6 to 2", dict(latest=6, saved=(2, 4, 6), recorded=(1, 2), logged=(3,)),
     ResumePoint(2, 6), None),
    ("in step 4, step 2's weights removed by verl's rotation", dict(latest=4, saved=(4,), removed=(2,),
                                                                    recorded=(1, 2, 3)),
     ResumePoint(4, 4, lost=True),
     "--resume: verl checkpointed step 4 but was stopped before logging it, and no earlier checkpoint is left to run "
     "it again from; metrics.jsonl will have no row for step 4"),
])
def test_a_resume_goes_on_from_the_latest_checkpoint_whose_step_was_logged(tmp_path, stop, run, expected, message):
    point = resume_point(_stopped_run(tmp_path, **run))
    assert point == expected, stop
    if message is not None:
        assert point.message(START_AGAIN) == message
    if point == ResumePoint(point.latest, point.latest):
        assert point.message(START_AGAIN) is None  # the plain resume says nothing
