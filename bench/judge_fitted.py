"""The fitted CPU judge: time per dialogue against the heuristic and verl's own GSM8K rule reward, and junk.

    python bench/judge_fitted.py            32 scripted teaching dialogues, 5 repeats
    python bench/judge_fitted.py --quick    8 dialogues, 2 repeats

Prints, in one run on this machine: the median time to judge one whole dialogue with the ``offline``
(heuristic) and ``fitted`` judges and to score its last student turn with verl's ``gsm8k`` rule
(``verl.utils.reward_score.gsm8k.compute_score``, the reward verl's examples train on); then the mean reward
of the same dialogues with every tutor turn replaced by each kind of junk (pearl_verl.judge.junk), and, on those of
them with a wrong attempt that each judge finds complete, clean questions against the same questions opening with
"Well done!" (praise that accepts the wrong attempt; docs/judge.md). Exits 1
when the fitted judge takes more than TARGET times the heuristic's time (the main job judges every training
and held-out dialogue with it).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time

from pearl_verl.judge.judge_config import JudgeConfig, build_judge
from pearl_verl.judge.junk import (
    CLEAN,
    KINDS,
    clean_with_wrong_attempts,
    teaching_dialogues,
    with_praise_openings,
    with_tutor_turns,
)

TARGET = 3.0
"""Fitted / heuristic time per dialogue: the model adds one batched scoring of a dialogue's tutor turns."""


def _per_dialogue_ms(score, dialogues, repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for episode in dialogues:
            score(episode)
        runs.append((time.perf_counter() - start) * 1000 / len(dialogues))
    return statistics.median(runs)


def _reward(result) -> float:
    return sum(result.dims.values()) / len(result.dims) if result.ok else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    count, repeats = (4, 2) if args.quick else (16, 5)
    dialogues = teaching_dialogues(count)
    judges = {name: build_judge(JudgeConfig(backend=name)) for name in ("offline", "fitted")}
    for judge in judges.values():  # the model's first load and wordfreq's first lookups are not per dialogue
        asyncio.run(judge.judge(dialogues[0]))
    from verl.utils.reward_score.gsm8k import compute_score

    times = {name: _per_dialogue_ms(lambda e, j=judge: asyncio.run(j.judge(e)), dialogues, repeats)
             for name, judge in judges.items()}
    times["verl gsm8k rule"] = _per_dialogue_ms(
        lambda e: compute_score(f"#### {e.turns[-1].text}", e.problem.answer), dialogues, repeats)
    print(f"machine: {platform.processor() or platform.machine()}, {len(dialogues)} dialogues, {repeats} repeats")
    print("| scorer | ms per dialogue (median) |\n|---|---:|")
    for name, ms in times.items():
        print(f"| {name} | {ms:.2f} |")
    ratio = times["fitted"] / times["offline"]
    print(f"fitted / offline: {ratio:.2f} (target <= {TARGET})")
    print("\n| tutor turns | " + " | ".join(judges) + " |\n|---|" + "---:|" * len(judges))
    for kind in KINDS:
        means = [statistics.mean(_reward(asyncio.run(j.judge(with_tutor_turns(e, kind, s))))
                                 for s, e in enumerate(dialogues)) for j in judges.values()]
        print(f"| {kind}{' (clean)' if kind == CLEAN else ''} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    print("\n| judge | dialogues with a wrong attempt | clean questions | opening with \"Well done!\" | praise at least as high |"
          "\n|---|---:|---:|---:|---:|")
    for name, judge in judges.items():
        erred = clean_with_wrong_attempts([e for e in dialogues if asyncio.run(judge.judge(e)).gate])
        plain = [_reward(asyncio.run(judge.judge(e))) for e in erred]
        praised = [_reward(asyncio.run(judge.judge(with_praise_openings(e)))) for e in erred]
        if erred:
            print(f"| {name} | {len(erred)} | {statistics.mean(plain):.3f} | {statistics.mean(praised):.3f} | "
                  f"{sum(p >= q for p, q in zip(praised, plain))} |")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
