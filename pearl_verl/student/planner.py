"""Intent planning z^t ~ pi_plan(. | q, h, m^t, c): the cognitive model and the rule-based planner.

The plan of a turn is factorised. The cognitive model draws *what the student can do* from mastery
and profile: whether they attempt, which reference step, and whether the attempt comes out correct,
partial or incorrect (with the wrong value they would state). The behaviour labels (*how* they
engage) then come from the rule planner below (offline backend, or ``planner="rules"``) or from the
LLM planner, which sees the drawn outcome. Keeping the outcome in the cognitive model is what makes
correctness controllable by the configured ability; the LLM cannot talk a low-mastery student into
a correct step.

Probabilities (traits normalised to {0, 0.5, 1}; q = the lowest mastery among the step's units):
- a tutor message that is not language: no attempt, uncertainty and help-seeking (or leaving, as below);
- off-topic turn: 0.02 + 0.10 (1 - attention); leaving: engagement < 0.15, then 0.4;
- no attempt: clip(0.30 - 0.12 activeness - 0.18 q + 0.10 [>= 2 failures] (1 - perseverance), 0.03, 0.6);
- correct | attempt: clip(q (0.55 + 0.30 comprehension + 0.15 attention) + 0.12 [hinted step]
  + 0.05 failures perseverance, 0.03, 0.95); partial | not correct: 0.35 + 0.30 q; else incorrect.
The label probabilities are in :func:`rule_labels`; docs/simulator.md tabulates them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace

from pearl_verl.dialogue.answers import answers_match
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import CognitiveProfile
from pearl_verl.knowledge.decomposition import Decomposition
from pearl_verl.student.reading import TutorMove
from pearl_verl.student.taxonomy import ordered_labels


@dataclass
class Mind:
    """The simulator's internal state between turns (mutable, owned by one session).

    Attributes:
        mastery: m^t.
        done: indices of reference steps the student has carried out correctly.
        last_step: the step of the previous attempt, or None.
        last_attempt: the previous turn's attempt outcome.
        failures: consecutive turns without a correct attempt.
        engagement: 0..1; falls with failures (faster for low perseverance), rises with success.
        misconception: the student still holds the condition's misconception.
        belief: the wrong final answer that misconception leads to, when it states one.
        solved: the student has stated the correct final answer.
        after_solved: turns spoken since solving.
    """

    mastery: dict[str, float]
    done: set[int] = field(default_factory=set)
    last_step: int | None = None
    last_attempt: str = "none"
    failures: int = 0
    engagement: float = 0.7
    misconception: bool = False
    belief: str | None = None
    solved: bool = False
    after_solved: int = 0


@dataclass(frozen=True)
class Plan:
    """The intent of one turn and the content the realiser must express.

    Attributes:
        attempt: one of ATTEMPT_OUTCOMES.
        labels: behaviour labels (taxonomy order).
        step: the reference step attempted or asked about, or None.
        final: the attempt is at the final answer.
        value: the number the attempt states (the right or the wrong result), or None.
        misconception: the wrong value comes from a wrong method rather than a slip.
        leave: the student ends the session without solving.
        conclude: the student ends the session after solving.
        confused: the tutor's message was not language; the student says they do not understand it.
    """

    attempt: str
    labels: tuple[str, ...]
    step: int | None = None
    final: bool = False
    value: str | None = None
    misconception: bool = False
    leave: bool = False
    conclude: bool = False
    confused: bool = False


@dataclass(frozen=True)
class Traits:
    """Profile traits normalised to {0, 0.5, 1}."""

    act: float
    per: float
    com: float
    exp: float
    att: float

    @classmethod
    def of(cls, profile: CognitiveProfile) -> Traits:
        n = lambda v: (v - 1) / 2  # noqa: E731
        return cls(
            n(profile.activeness),
            n(profile.perseverance),
            n(profile.comprehension),
            n(profile.expressiveness),
            n(profile.attention),
        )


def clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def initial_engagement(profile: CognitiveProfile) -> float:
    t = Traits.of(profile)
    return 0.45 + 0.25 * t.per + 0.15 * t.att + 0.10 * t.act


def target_step(mind: Mind, move: TutorMove, n_steps: int) -> int:
    """The step the student works on: the one the tutor addresses, else a retried one, else the next undone."""
    if move.step is not None:
        return move.step
    if mind.failures and mind.last_step is not None and mind.last_step not in mind.done:
        return mind.last_step
    return next((i for i in range(n_steps) if i not in mind.done), n_steps - 1)


def step_mastery(decomposition: Decomposition, mastery: dict[str, float], step: int) -> float:
    """q: the weakest needed unit of a step (the mean over all units when the step names none)."""
    units = decomposition.steps[step].units or decomposition.units
    return min(mastery[u] for u in units) if units else 0.5


def cognitive_draw(
    mind: Mind,
    move: TutorMove,
    profile: CognitiveProfile,
    decomposition: Decomposition,
    problem: Problem,
    rng: random.Random,
) -> Plan:
    """Draw the attempt outcome, step and stated value (labels empty; a planner adds them)."""
    t = Traits.of(profile)
    n_steps = len(decomposition.steps)
    step = target_step(mind, move, n_steps)
    result = decomposition.steps[step].result
    final = step == n_steps - 1 or (result is not None and answers_match(problem.answer, result))
    if move.reveals_answer and rng.random() < 0.5 + 0.4 * t.att:
        return Plan("correct", (), step, True, problem.answer)
    q = step_mastery(decomposition, mind.mastery, step)
    stuck = mind.failures >= 2
    p_none = clip(0.30 - 0.12 * t.act - 0.18 * q + 0.10 * stuck * (1 - t.per), 0.03, 0.6)
    if rng.random() < p_none:
        return Plan("none", (), step, final)
    if mind.misconception and final and rng.random() < 0.8:
        value = mind.belief or wrong_value(decomposition, problem, step, rng, True)[0]
        return Plan("incorrect", (), step, True, value, misconception=True)
    hinted = 0.12 if move.step == step else 0.0
    p_correct = clip(q * (0.55 + 0.30 * t.com + 0.15 * t.att) + hinted + 0.05 * mind.failures * t.per, 0.03, 0.95)
    draw = rng.random()
    if draw < p_correct:
        return Plan("correct", (), step, final, problem.answer if final else result)
    if draw < p_correct + (1 - p_correct) * (0.35 + 0.30 * q):
        return Plan("partial", (), step, final)
    value, systematic = wrong_value(decomposition, problem, step, rng, rng.random() < 0.4)
    return Plan("incorrect", (), step, final, value, misconception=systematic)


def label_odds(plan: Plan, mind: Mind, move: TutorMove, t: Traits) -> dict[str, float]:
    """The rule planner's probability of each behaviour label, given the drawn attempt and the context."""
    if plan.attempt == "none":
        odds = {
            "uncertainty": 0.75,
            "help_seeking": 0.45 * (0.6 + 0.4 * t.act),
            "metacognitive_monitoring": 0.25,
            "answer_seeking": 0.25 * (1 - t.per) + 0.03 if mind.failures else 0.0,
        }
    elif plan.attempt == "partial":
        odds = {
            "uncertainty": 0.5,
            "help_seeking": 0.3 * (0.6 + 0.4 * t.act),
            "explaining_reasoning": 0.2 * t.exp,
            "metacognitive_monitoring": 0.3,
        }
    elif plan.attempt == "incorrect":
        odds = {
            "misconception": 1.0 if plan.misconception else 0.0,
            "guessing": 0.5 * (1 - t.per) * (1 - t.com) + 0.05,
            "explaining_reasoning": 0.3 + 0.4 * t.exp,
            "uncertainty": 0.25,
        }
    else:
        odds = {
            "explaining_reasoning": 0.25 + 0.5 * t.exp,
            "metacognitive_monitoring": 0.2 + 0.3 * t.com,
            "uncertainty": 0.03 + 0.1 * (1 - t.com),
        }
    if plan.attempt != "none":
        hinted = move.step is not None or move.flags_error or bool(move.units)
        retried = mind.last_attempt in ("incorrect", "partial") and plan.step == mind.last_step
        odds["feedback_uptake"] = 0.55 + 0.35 * t.com if hinted else 0.0
        odds["persistence"] = 0.45 + 0.45 * t.per if mind.failures else 0.0
        odds["self_correction"] = 0.7 if retried and plan.attempt in ("correct", "partial") else 0.0
    praised = move.praises and mind.last_attempt == "correct"
    odds["positive_engagement"] = (0.15 if praised else 0.0) + (
        0.02 + 0.04 * t.act if plan.attempt == "correct" else 0.0
    )
    odds["frustration"] = 0.5 if mind.engagement < 0.35 else 0.0
    return odds


def rule_labels(
    plan: Plan, mind: Mind, move: TutorMove, profile: CognitiveProfile, rng: random.Random
) -> tuple[str, ...]:
    """The rule planner's behaviour labels: one draw per label from :func:`label_odds`.

    A guess comes without reasoning (``guessing`` drops ``explaining_reasoning``), and a turn without
    an attempt always shows something (``uncertainty`` when nothing else was drawn).
    """
    odds = label_odds(plan, mind, move, Traits.of(profile))
    labels = {label for label, probability in odds.items() if rng.random() < probability}
    if "guessing" in labels:
        labels.discard("explaining_reasoning")
    if plan.attempt == "none" and not labels:
        labels.add("uncertainty")
    return ordered_labels(labels)


def plan_rules(
    mind: Mind,
    move: TutorMove,
    profile: CognitiveProfile,
    decomposition: Decomposition,
    problem: Problem,
    rng: random.Random,
    allow_leaving: bool = True,
) -> Plan:
    """The whole offline plan: special turns (after solving, off-topic, leaving), else draw + labels."""
    special = special_turn(mind, move, profile, decomposition, rng, allow_leaving)
    if special is not None:
        return special
    plan = cognitive_draw(mind, move, profile, decomposition, problem, rng)
    labels = rule_labels(plan, mind, move, profile, rng)
    if move.reveals_answer and plan.attempt == "correct" and plan.final:
        labels = ordered_labels({*labels, "feedback_uptake"})
    return replace(plan, labels=labels)


def special_turn(
    mind: Mind,
    move: TutorMove,
    profile: CognitiveProfile,
    decomposition: Decomposition,
    rng: random.Random,
    allow_leaving: bool,
) -> Plan | None:
    """Turns decided before any attempt: wrapping up after solving, not understanding, drifting off-topic, leaving.

    A tutor message that is not language (``move.legible`` False) gets no attempt, only confusion and a
    request for help, in both backends: a student does not understand junk, so nothing the tutor might
    have meant by it can move them on. After solving it is wrapped up like any message that asks nothing.
    """
    t = Traits.of(profile)
    last = len(decomposition.steps) - 1
    leaving = allow_leaving and mind.engagement < 0.15
    if mind.solved:
        if move.asks and mind.after_solved < 2:
            labels = {"metacognitive_monitoring"} | (
                {"explaining_reasoning"} if rng.random() < 0.5 + 0.4 * t.exp else set()
            )
            return Plan("correct", ordered_labels(labels), last, True, None)
        thanks = {"positive_engagement"} if rng.random() < 0.5 else set()
        return Plan("none", ordered_labels(thanks | {"metacognitive_monitoring"}), None, conclude=True)
    if not move.legible:
        if leaving and rng.random() < 0.4:
            return Plan("none", ("frustration",), leave=True)
        return Plan("none", ordered_labels({"uncertainty", "help_seeking"}), confused=True)
    if rng.random() < 0.02 + 0.10 * (1 - t.att):
        extra = {"uncertainty"} if rng.random() < 0.3 else set()
        return Plan("none", ordered_labels({"off_topic"} | extra))
    if leaving and rng.random() < 0.4:
        return Plan("none", ("frustration",), leave=True)
    return None


def advance(mind: Mind, plan: Plan, move: TutorMove, profile: CognitiveProfile, rng: random.Random) -> None:
    """Update the affective and progress state after a turn (mastery is updated separately)."""
    t = Traits.of(profile)
    if plan.attempt == "correct" and plan.step is not None:
        mind.done.add(plan.step)
        mind.failures = 0
        mind.engagement += 0.06
    elif "off_topic" not in plan.labels and not plan.conclude:  # a confused turn too: junk wears a student down
        mind.failures += 1
        mind.engagement -= (0.06 if plan.attempt != "none" else 0.04) * (1.3 - t.per)
    if move.praises:
        mind.engagement += 0.04
    if mind.misconception and (move.flags_error or move.step is not None) and rng.random() < 0.3 + 0.4 * t.com:
        mind.misconception = False
    mind.engagement = clip(mind.engagement, 0.0, 1.0)
    mind.last_attempt = plan.attempt
    if plan.step is not None:
        mind.last_step = plan.step
    if mind.solved:
        mind.after_solved += 1


def wrong_value(
    decomposition: Decomposition, problem: Problem, step: int, rng: random.Random, systematic: bool
) -> tuple[str | None, bool]:
    """A wrong result for ``step`` and whether it comes from a wrong method.

    A systematic error applies another operation (+, *, |-|, /) to the step's first two operands;
    a slip (or a step without two operands) is off by one, by ten, or by a factor of ten or two.
    The value never equals the step's result or the final answer. None when the step has no
    numeric result to get wrong.
    """
    truth_text = problem.answer if step == len(decomposition.steps) - 1 else decomposition.steps[step].result
    truth = to_number(truth_text)
    if truth is None:
        return None, systematic
    left = decomposition.steps[step].text.split("=")[0]
    operands = [float(n.replace(",", "")) for n in _OPERAND.findall(left)]
    methods: list[float] = []
    if systematic and len(operands) >= 2:
        a, b = operands[0], operands[1]
        methods = [a + b, a * b, abs(a - b)] + ([a / b] if b else [])
        rng.shuffle(methods)
    slips = [truth + 1, truth - 1, truth * 10, truth + 10, truth * 2, truth / 2]
    rng.shuffle(slips)
    for value, is_method in [*((v, True) for v in methods), *((v, False) for v in slips)]:
        text = format_number(value)
        if abs(value - truth) > 1e-9 and value >= 0 and not answers_match(problem.answer, text):
            return text, is_method
    return format_number(truth + 7), False


_OPERAND = re.compile(r"\d[\d,]*(?:\.\d+)?")


def to_number(text: str | None) -> float | None:
    """A plain number or simple fraction as float, or None."""
    if text is None:
        return None
    cleaned = text.replace(",", "").replace("$", "").strip()
    try:
        if "/" in cleaned:
            num, den = cleaned.split("/", 1)
            return float(num) / float(den)
        return float(cleaned)
    except (ValueError, ZeroDivisionError):
        return None


def format_number(value: float) -> str:
    """Integers without decimals, other values rounded to two places."""
    if abs(value - round(value)) < 1e-9:
        return str(int(round(value)))
    return f"{value:.2f}".rstrip("0").rstrip(".")
