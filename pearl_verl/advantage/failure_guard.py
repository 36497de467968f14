"""Stop a run whose judge or student endpoint keeps failing, instead of training on nothing.

A dialogue whose judgement failed, or whose student or tutor backend failed, is flagged
(``judge_ok=0``) and gets advantage 0. When that holds for most of a batch, step after step, every
advantage is 0 and a run would go on for hours learning nothing, visible only in the
``pearl/judge/failure_rate`` metric. :class:`FailureGuard` turns that into a clear error that
names what failed, from the ``pearl/failure/<cause>_rate`` metrics of :func:`failure_cause_metrics`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS
from pearl_verl.ranges import Range, check_ranges

FAILURE_RATE_KEY = "pearl/judge/failure_rate"
PARSE_FAILURE_RATE_KEY = "pearl/judge/parse_failure_rate"
HTTP_STATUS_KEY = "pearl/judge/http_status"
WEAK_JUDGE_PARSE_RATE = 0.5
"""Above this share of unparsable judge replies, the stop says the judge model is too weak for the format."""

CAUSES: dict[str, str] = {
    "student": "the student endpoint (pearl.student.base_url; dialogues ended in student_error)",
    "tutor": "the tutor, i.e. the policy's rollout server (dialogues ended in tutor_error)",
    "judge": "the judge endpoint (reward.reward_kwargs.base_url; `pearl-verl doctor` checks it)",
}
"""What can fail, and where to look; a flagged dialogue's cause comes from its ``end_reason``."""

CAUSE_KEYS: dict[str, str] = {cause: f"pearl/failure/{cause}_rate" for cause in CAUSES}
# ``student_error`` -> ``student``: the backend failures that flag a dialogue without a judge call
_CAUSE_OF_END_REASON = {reason: reason.removesuffix("_error") for reason in FAILED_EPISODE_REASONS}


def failure_cause_metrics(
    end_reasons: Sequence[Any],
    judge_ok: Sequence[Any],
    padding: Sequence[bool] | None = None,
) -> dict[str, float]:
    """Share of real dialogues flagged (``judge_ok`` 0), split by what failed.

    A flagged dialogue that ended in ``student_error`` or ``tutor_error`` never reached the judge,
    so it is the student's or the tutor's; any other flagged one (including a row without an
    episode) is the judge's. The three rates add up to ``pearl/judge/failure_rate``.

    Args:
        end_reasons: (bs,) each dialogue's ``end_reason`` (None when unknown).
        judge_ok: (bs,) the reward field; None counts as 1, as the estimator reads a missing one.
        padding: (bs,) True for verl's synthetic padding rows, which are left out.

    Returns:
        ``{pearl/failure/<cause>_rate: share}`` for every cause; {} without a real dialogue.
    """
    pads = [False] * len(judge_ok) if padding is None else padding
    rows = [(reason, ok) for reason, ok, pad in zip(end_reasons, judge_ok, pads, strict=True) if not pad]
    if not rows:
        return {}
    counts = dict.fromkeys(CAUSES, 0)
    for reason, ok in rows:
        if ok is not None and float(ok) <= 0.5:
            counts[_CAUSE_OF_END_REASON.get(reason, "judge")] += 1
    return {CAUSE_KEYS[cause]: n / len(rows) for cause, n in counts.items()}


@dataclass(frozen=True)
class FailureGuardConfig:
    """Settings of the failure guard (root config section ``pearl.failure_guard``).

    Attributes:
        max_failure_rate: a step whose share of flagged dialogues (``pearl/judge/failure_rate``) is
            above this counts as failing.
        patience: consecutive failing steps that stop the run; 0 disables the guard.
    """

    RANGES: ClassVar[Mapping[str, Range]] = {
        "max_failure_rate": Range(float, low=0, high=1, high_open=True, why="at 1 it could never trip"),
        "patience": Range(int, low=0, why="0 disables the guard"),
    }

    max_failure_rate: float = 0.5
    patience: int = 3

    def __post_init__(self) -> None:
        check_ranges(self, prefix="pearl.failure_guard.")


def _with_url(cause: str, url: Any) -> str:
    """``cause`` with the endpoint's URL after its setting (``reward.reward_kwargs.base_url=http://...``)."""
    if not url:
        return cause
    return cause.replace("base_url;", f"base_url={url};", 1)


class TrainingStalled(RuntimeError):
    """Raised when the failure rate stayed above the threshold for ``patience`` consecutive steps."""


class FailureGuard:
    """Counts consecutive steps whose failure rate exceeds the threshold; raises at ``patience``."""

    def __init__(self, config: FailureGuardConfig, resume: str = "relaunch with trainer.resume_mode=auto",
                 endpoints: Mapping[str, Any] | None = None) -> None:
        """``resume``: how this entry point continues from its last checkpoint, for the message.
        ``endpoints``: the run's judge and student URLs by cause, named in the message (None: unknown)."""
        self.config = config
        self.resume = resume
        self.causes = {cause: _with_url(text, (endpoints or {}).get(cause)) for cause, text in CAUSES.items()}
        self._recent: deque[tuple[int | None, float, dict[str, float]]] = deque(maxlen=max(config.patience, 1))
        self._unparsed: deque[float] = deque(maxlen=max(config.patience, 1))
        self._status: int = 0

    def update(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Take one step's metrics.

        Args:
            metrics: the step's metrics; a step without ``pearl/judge/failure_rate`` (no real
                sample) leaves the count as it is. ``pearl/failure/<cause>_rate``, when present,
                name what failed in the message, and ``pearl/judge/parse_failure_rate`` whether
                the judge answered in a form it could not use.
            step: the step's number, for the message.

        Raises:
            TrainingStalled: on the ``patience``-th consecutive failing step.
        """
        rate = metrics.get(FAILURE_RATE_KEY)
        if not self.config.patience or rate is None:
            return
        if rate <= self.config.max_failure_rate:
            self._recent.clear()
            self._unparsed.clear()
            self._status = 0
            return
        causes = {cause: float(metrics[key]) for cause, key in CAUSE_KEYS.items() if key in metrics}
        self._recent.append((step, float(rate), causes))
        if PARSE_FAILURE_RATE_KEY in metrics:
            self._unparsed.append(float(metrics[PARSE_FAILURE_RATE_KEY]))
        if metrics.get(HTTP_STATUS_KEY):
            self._status = int(metrics[HTTP_STATUS_KEY])
        if len(self._recent) == self.config.patience:
            raise TrainingStalled(self._message())

    def _message(self) -> str:
        steps = [step for step, _, _ in self._recent]
        where = f"steps {steps[0]}-{steps[-1]}" if None not in steps else f"the last {len(steps)} steps"
        rates = ", ".join(f"{rate:.2f}" for _, rate, _ in self._recent)
        return (
            f"{FAILURE_RATE_KEY} stayed above {self.config.max_failure_rate:g} for {len(steps)} consecutive steps "
            f"({where}: {rates}): those dialogues are flagged judge_ok=0 and get advantage 0, so training learns "
            f"nothing. {self._culprits()} Fix it, then {self.resume} to continue from the last checkpoint. "
            "pearl.failure_guard.max_failure_rate and .patience tune this stop (patience=0 disables it)."
        )

    def _culprits(self) -> str:
        """What failed, by mean share of dialogues over the failing steps, largest first."""
        shares = {
            cause: sum(causes.get(cause, 0.0) for _, _, causes in self._recent) / len(self._recent)
            for cause in CAUSES
        }
        named = sorted((share, cause) for cause, share in shares.items() if share > 0)
        if not all(causes for _, _, causes in self._recent) or not named:
            return (  # no cause metrics from this entry point: point at both endpoints
                f"Check {self.causes['judge']} and {self.causes['student']}; dialogues that ended in tutor_error count "
                "too."
            )
        failed = "; ".join(f"{self.causes[cause]}: {share:.2f}" for share, cause in reversed(named))
        status = f" The judge endpoint answered HTTP {self._status}." if self._status and shares.get("judge") else ""
        return (f"What failed, as a mean share of dialogues over these steps: {failed}.{status}"
                f"{self._weak_judge(shares)}")

    def _weak_judge(self, shares: Mapping[str, float]) -> str:
        """A sentence when the judge answered but mostly in a form it could not use (not when it was down)."""
        unparsed = sum(self._unparsed) / len(self._unparsed) if self._unparsed else 0.0
        if not shares.get("judge") or unparsed <= WEAK_JUDGE_PARSE_RATE:
            return ""
        return (f" {unparsed:.0%} of the judge's replies did not parse ({PARSE_FAILURE_RATE_KEY}): the judge model "
                "answers but not in the rubric's format. `pearl-verl judge-check` measures this before a run; a "
                "stronger judge model, or a server that holds it to the JSON Schema (vLLM with "
                "reward.reward_kwargs.structured_output=json_schema), fixes it.")
