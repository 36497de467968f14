"""Judge calibration: can a judge rank dialogues whose order is known?

A contrast pair is two dialogues with the same problem and the same simulated student (profile and
seed), held by two scripted tutors of which one is better on named dimensions by construction:

- ``socratic_vs_answer_first``: asks its way to the answer vs states the answer at once
  (``leak``: the answer-first tutor gives it away; ``guide``: it asks nothing);
- ``recheck_vs_blame``: asks a student with a wrong number to re-check how they got it vs meets
  every turn with "No, that is wrong" (``emotion``);
- ``on_task_vs_empty``: a question about the problem every turn vs "Continue." (``guide``).

A judge *agrees* on a pair and dimension when it scores the better dialogue strictly higher on
that dimension, before the completion gate (the criteria's mean: the gate would zero both
dialogues of a pair the student never finished). A tie is no agreement: a judge that scores
everything alike ranks nothing. A judgement that fails (``judge_ok=0``) is no agreement either,
and the parse rate is reported beside.

The shipped set (``pearl_verl/resources/judge_calibration.jsonl``) is what ``pearl-verl
judge-check`` reports; the tests also use a second set of other problems
(``tests/judge/fixtures/judge_calibration_heldout.jsonl``) that the threshold was never set on.
Both are built by ``python -m pearl_verl.judge.calibration`` from GSM8K test problems and the
offline student simulator; rebuilding gives the same dialogues.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pearl_verl.async_run import run_async
from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.judge.judge_contract import JudgeResult
from pearl_verl.judge.scoring import gated_dimension_scores
from pearl_verl.stats import Estimate, wilson_ci
from pearl_verl.write_whole import write_whole

SHIPPED = "judge_calibration.jsonl"
MIN_AGREEMENT = 0.75
"""Default floor on the share of (pair, dimension) comparisons a judge must order correctly.

Measured (docs/judge.md): the offline judge orders 94% of the shipped comparisons and 88% of the
held-out ones; SmolLM2-135M served by llama-cpp-python none (no judgement of it parsed); a judge
that scores every dialogue alike orders none, a coin about half. 0.75 asks for a judge clearly
better than chance and still lets a good judge disagree with a scripted contrast now and then."""
MIN_PARSE_RATE = 0.9
"""Default floor on the share of calibration dialogues the judge returns a parsable judgement for."""


@dataclass(frozen=True)
class Contrast:
    """Two scripted tutors, the first better than the second on ``dimensions`` by construction."""

    better: str
    worse: str
    dimensions: tuple[str, ...]
    ability: str


CONTRASTS: dict[str, Contrast] = {
    "socratic_vs_answer_first": Contrast("socratic", "leaking", ("leak", "guide"), "medium"),
    "recheck_vs_blame": Contrast("coach", "blaming", ("emotion",), "low"),
    "on_task_vs_empty": Contrast("coach", "terse", ("guide",), "medium"),
}


@dataclass(frozen=True)
class CalibrationPair:
    """One contrast pair, read from a calibration file."""

    pair_id: str
    kind: str
    dimensions: tuple[str, ...]
    better: EpisodeRecord
    worse: EpisodeRecord


@dataclass
class CalibrationReport:
    """Per-dimension agreement over a set of pairs, and whether the judge can rank them."""

    agreements: dict[str, list[int]] = field(default_factory=dict)
    judged: int = 0
    parsed: int = 0
    failures: list[str] = field(default_factory=list)
    endpoint_failures: Counter[str] = field(default_factory=Counter)
    """Failed judgements whose endpoint failed (``http_401``, ``connection``, ``timeout``...), by reason."""

    def agreement(self, dimension: str | None = None) -> Estimate:
        """Share of comparisons ordered correctly (all dimensions when ``dimension`` is None), 95% interval."""
        values = self.agreements.get(dimension, []) if dimension else [v for vs in self.agreements.values() for v in vs]
        return wilson_ci(sum(values), len(values))

    def parse_rate(self) -> Estimate:
        return wilson_ci(self.parsed, self.judged)

    def passes(self, min_agreement: float = MIN_AGREEMENT, min_parse_rate: float = MIN_PARSE_RATE) -> bool:
        return self.agreement().mean >= min_agreement and self.parse_rate().mean >= min_parse_rate

    def verdict(self, min_agreement: float = MIN_AGREEMENT, min_parse_rate: float = MIN_PARSE_RATE) -> str:
        """One sentence a person reads: can this judge rank these pairs, and if not, why not."""
        agree, parse = self.agreement(), self.parse_rate()
        if self.passes(min_agreement, min_parse_rate):
            return (f"the judge ranks these pairs: it orders {agree.mean:.0%} of the comparisons as built "
                    f"(floor {min_agreement:.0%}) and parses {parse.mean:.0%} of its judgements.")
        down = sum(self.endpoint_failures.values())
        if down and 2 * down >= self.judged:  # a dead or refusing server is no verdict on the model
            kinds = ", ".join(f"{kind} {count}" for kind, count in self.endpoint_failures.most_common())
            return (f"the judge endpoint failed on {down} of {self.judged} judgements ({kinds}): nothing can be said "
                    "of the judge model. Check the server (its URL, --model, the key in --api-key-env, its log) "
                    "and run this again.")
        reasons = []
        if parse.mean < min_parse_rate:
            reasons.append(f"only {parse.mean:.0%} of its judgements parse (floor {min_parse_rate:.0%})")
        if agree.mean < min_agreement:
            reasons.append(f"it orders only {agree.mean:.0%} of the comparisons as built (floor {min_agreement:.0%})")
        return ("the judge cannot rank these pairs: " + " and ".join(reasons)
                + ". Its rewards would train on noise: use a stronger or finetuned judge model, or a structured "
                  "output the server follows.")

    def to_dict(self, min_agreement: float = MIN_AGREEMENT, min_parse_rate: float = MIN_PARSE_RATE) -> dict[str, Any]:
        def interval(estimate: Estimate) -> dict[str, float]:
            return {"mean": estimate.mean, "low": estimate.low, "high": estimate.high, "n": estimate.n}

        return {
            "passed": self.passes(min_agreement, min_parse_rate),
            "agreement": interval(self.agreement()),
            "by_dimension": {d: interval(self.agreement(d)) for d in DIMENSIONS if d in self.agreements},
            "parse_rate": interval(self.parse_rate()),
            "min_agreement": min_agreement,
            "min_parse_rate": min_parse_rate,
            "failures": self.failures[:20],
            "endpoint_failures": dict(self.endpoint_failures),
            "verdict": self.verdict(min_agreement, min_parse_rate),
        }


def shipped_pairs_path() -> Path:
    return Path(str(resources.files("pearl_verl.resources").joinpath(SHIPPED)))


def load_pairs(path: Path) -> list[CalibrationPair]:
    """The pairs of a calibration file (one JSON object per line); a bad line is an error naming it."""
    from pearl_verl.errors import located
    from pearl_verl.jsonl import read_objects

    pairs = []
    for number, row in read_objects(path, "calibration pairs file"):
        try:
            dimensions = tuple(row["dimensions"])
            unknown = [d for d in dimensions if d not in DIMENSIONS]
            if unknown or not dimensions:
                raise ValueError(f"dimensions {list(dimensions)} must be some of {list(DIMENSIONS)}")
            pairs.append(CalibrationPair(str(row["id"]), str(row["kind"]), dimensions,
                                         EpisodeRecord.from_dict(row["better"]), EpisodeRecord.from_dict(row["worse"])))
        except (ValueError, KeyError, TypeError, AttributeError, InputError) as exc:
            raise located(path, number, f"not a calibration pair ({type(exc).__name__}: {exc}).") from None
    if not pairs:
        raise InputError(f"{path} holds no calibration pairs.")
    return pairs


async def check_judge(
    judge: Any,
    pairs: Sequence[CalibrationPair],
    concurrency: int = 4,
    on_judged: Callable[[], None] | None = None,
) -> CalibrationReport:
    """Judge both dialogues of every pair and count the comparisons the judge orders as built."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(episode: EpisodeRecord) -> JudgeResult:
        async with semaphore:
            result = await judge.judge(episode)
        if on_judged is not None:
            on_judged()
        return result

    results = await asyncio.gather(*(one(e) for pair in pairs for e in (pair.better, pair.worse)))
    report = CalibrationReport()
    for pair, better, worse in zip(pairs, results[0::2], results[1::2]):
        report.judged += 2
        report.parsed += int(better.ok) + int(worse.ok)
        for result, side in ((better, "better"), (worse, "worse")):
            if not result.ok:
                report.failures.append(f"{pair.pair_id} ({side}): {result.error}")
                if (result.reason or "").startswith("llm_"):
                    report.endpoint_failures[result.reason.removeprefix("llm_")] += 1
        # each dimension's criterion mean with the gate open (g = 1): the scores before the completion gate
        high = gated_dimension_scores(better.criteria, 1) if better.ok else {}
        low = gated_dimension_scores(worse.criteria, 1) if worse.ok else {}
        for dimension in pair.dimensions:
            ordered = bool(high and low and high[dimension] > low[dimension])
            report.agreements.setdefault(dimension, []).append(int(ordered))
    return report


def build_pairs(offset: int, count: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` pairs of each contrast on GSM8K test problems ``offset`` onward, with the offline student."""
    from pearl_verl.data.problem_files import load_problem_files
    from pearl_verl.dialogue.episode_runner import EpisodeLimits
    from pearl_verl.student.factory import build_simulator
    from pearl_verl.student.simulation_runs import make_jobs, run_jobs
    from pearl_verl.student.student_config import StudentConfig
    from pearl_verl.tutor.scripted import ScriptedLeakingTutor, ScriptedSocraticTutor
    from pearl_verl.tutor.styles import ScriptedBlamingTutor, ScriptedCoachTutor, ScriptedTerseTutor

    tutors = {"socratic": ScriptedSocraticTutor, "leaking": ScriptedLeakingTutor, "coach": ScriptedCoachTutor,
              "blaming": ScriptedBlamingTutor, "terse": ScriptedTerseTutor}
    items = load_problem_files(["gsm8k/test.jsonl"], offset + count * len(CONTRASTS))[offset:]
    limits = EpisodeLimits(max_tutor_turns=8)
    rows = []
    for k, (kind, contrast) in enumerate(CONTRASTS.items()):
        chosen = items[k * count:(k + 1) * count]
        jobs = make_jobs(chosen, contrast.ability, seed)
        sides = {}
        for side in ("better", "worse"):
            simulator = build_simulator(StudentConfig(backend="offline"))
            tutor = tutors[getattr(contrast, side)]()
            sides[side] = run_async(run_jobs(simulator, tutor, jobs, limits))
        for job, better, worse in zip(jobs, sides["better"], sides["worse"]):
            rows.append({"id": f"{kind}:{job.item.problem.problem_id}", "kind": kind,
                         "dimensions": list(contrast.dimensions), "better_tutor": contrast.better,
                         "worse_tutor": contrast.worse, "better": better.to_dict(), "worse": worse.to_dict()})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build a judge calibration set (contrast pairs) as JSON lines.")
    parser.add_argument("out", type=Path)
    parser.add_argument("--offset", type=int, default=0, help="first GSM8K test problem used")
    parser.add_argument("--count", type=int, default=4, help="pairs of each contrast")
    args = parser.parse_args(argv)
    rows = build_pairs(args.offset, args.count)
    write_whole(args.out, (json.dumps(row, sort_keys=True) + "\n" for row in rows))
    print(f"{len(rows)} pairs -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
