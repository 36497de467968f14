"""How many of the main job's cold-start dialogues the offline judge's completion gate now closes.

    python bench/gate_change.py [--seed 0] [--per-sample 4]

The cold-start pool of ``pearl-verl train-local``'s defaults (the mixed pool of scripted teachers on
its 24 MathDial training problems, high-ability students, 12 tutor turns), judged by the offline
judge. The gate before issue 32 was "ended normally and solved"; the rubric's gate also requires that
the student did not merely repeat a final answer the tutor stated unwarranted. Prints, per teacher and
overall, how many dialogues each gate opens and how many changed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-sample", type=int, default=4)
    args = parser.parse_args()

    from pearl_verl.dialogue.episode_runner import EpisodeLimits
    from pearl_verl.judge.features import extract_features
    from pearl_verl.judge.offline import HeuristicJudge
    from pearl_verl.student.factory import build_simulator
    from pearl_verl.student.student_config import StudentConfig
    from pearl_verl.train_local.cold_start import teacher_dialogues
    from pearl_verl.train_local.local_config import LocalTrainConfig
    from pearl_verl.train_local.train import draw_samples
    from pearl_verl.tutor.styles import TEACHER_POOLS

    config = LocalTrainConfig(seed=args.seed)
    simulator = build_simulator(StudentConfig(backend="offline"))
    samples, _ = draw_samples(config, simulator)
    episodes = asyncio.run(teacher_dialogues(simulator, samples, args.per_sample, EpisodeLimits(config.max_tutor_turns),
                                             config.seed, pool=config.cold_start_teachers))
    teachers = [cls.__name__ for cls in TEACHER_POOLS[config.cold_start_teachers]]
    judge = HeuristicJudge()
    counts: dict[str, Counter] = {}
    for k, episode in enumerate(episodes):
        teacher = teachers[k % len(teachers)]
        features = extract_features(episode)
        old = int(episode.ended_normally and features.solved)
        new = asyncio.run(judge.judge(episode)).gate
        row = counts.setdefault(teacher, Counter())
        row.update(dialogues=1, old=old, new=new, closed=old and not new, opened=new and not old)
    total = sum(counts.values(), Counter())
    print("| teacher | dialogues | gate open before | gate open now | closed by the change |")
    print("|---|---:|---:|---:|---:|")
    for name, row in [*counts.items(), ("all", total)]:
        print(f"| {name} | {row['dialogues']} | {row['old']} | {row['new']} | {row['closed']} "
              f"({100 * row['closed'] / row['dialogues']:.0f}%) |")
    assert total["opened"] == 0, "the rubric's gate only adds a condition"
    return 0


if __name__ == "__main__":
    sys.exit(main())
