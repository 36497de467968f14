"""A synthetic tutoring environment: a student with hidden state, eight tutoring behaviours, a rubric judge.

Each episode is one dialogue. Per turn the tutor picks one behaviour (:data:`ACTIONS`); the student
answers by progressing one solution step or not, getting stuck, getting frustrated, or (once solved)
concluding. A group shares its student condition (ability, misconception), as in PEARL. All
episodes of a batch run in parallel as tensors (shape ``(B,)``), on CPU, seeded.

The student (3 steps to solve; ``ability`` low / medium / high):

- ``question`` (a Socratic question) and ``hint`` advance a step with an ability-dependent chance
  (hints more often), cut to 30% while a misconception is active and to 60% while frustrated, and
  raised by half right after a ``diagnose``; a failure leaves the student stuck, and two failures in a
  row frustrate them (more likely the lower the ability).
- ``explain`` advances a step for sure (half as often under a misconception) but may contain an error.
- ``reveal`` gives the answer: solved at once (warranted only after two failed attempts in a row).
- ``check`` asks the student to explain or verify: no progress, but it discovers a mistake while stuck,
  verifies a step once one is done, and is a reflection once solved.
- ``encourage`` removes frustration. ``diagnose`` removes a misconception and helps a stuck student.
- ``end`` ends the session. A solved student concludes on their own with ``conclude_prob`` per turn.

The judge scores 24 criteria with the package rubric's shape (each 0-2; the completion gate 0/1;
:data:`CRITERIA`) from counts of what happened, flips each non-gate criterion by one point with
probability ``judge_noise`` (judge noise), gates every criterion by g (completed, and solved by the
student or after a warranted reveal, as the rubric's gate criterion says), and
averages each dimension's criteria, exactly as :mod:`pearl_verl.judge.scoring` does. The point of
the design is the dimensions' different statistics (measured in the report): ``leak`` and
``complete`` swing by up to 1.0 on one behaviour; ``acc`` and ``emotion`` move by 1/6 and 1/4 and
only in some dialogues; ``meta`` is sparse under the initial policy.

It is a stand-in for the paper's tutor, student and judge, built to test the advantage estimators,
not a model of real tutoring.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ACTIONS: tuple[str, ...] = ("question", "hint", "explain", "reveal", "check", "encourage", "diagnose", "end")
QUESTION, HINT, EXPLAIN, REVEAL, CHECK, ENCOURAGE, DIAGNOSE, END = range(len(ACTIONS))
ABILITIES: tuple[str, ...] = ("low", "medium", "high")
DIMS: tuple[str, ...] = ("acc", "leak", "complete", "load", "guide", "meta", "adaptive", "emotion")
CRITERIA: dict[str, tuple[str, ...]] = {
    "acc": ("statements_correct", "feedback_correct", "toward_reference"),
    "leak": ("final_answer", "key_steps", "hint_specificity"),
    "complete": ("session_complete", "steps_covered", "mistakes_addressed", "conclusion"),
    "load": ("concise", "clarity", "length", "relevance"),
    "guide": ("questioning", "guidance_effective", "student_agency"),
    "meta": ("discover_mistakes", "explain_verify", "reflection"),
    "adaptive": ("responds_to_difficulty", "difficulty_fit"),
    "emotion": ("encouraging_tone", "mistakes_as_learning"),
}
GATE = "session_complete"
STEPS = 3
PHASES = STEPS + 2  # progress 0..2, solved, solved and reflected
TURN_BUCKETS = (5, 10)  # the tutor sees whether t < 5, 5 <= t < 10 or t >= 10
NUM_STATES = PHASES * 2 * 2 * (len(TURN_BUCKETS) + 1)

_QUESTION_P = torch.tensor([0.35, 0.5, 0.65], dtype=torch.float64)  # per ability
_HINT_P = torch.tensor([0.55, 0.7, 0.8], dtype=torch.float64)
_FRUSTRATE_P = torch.tensor([0.7, 0.5, 0.3], dtype=torch.float64)


@dataclass(frozen=True)
class EnvConfig:
    """Settings of the environment.

    Attributes:
        max_turns: tutor-turn limit (paper: 15 in training).
        conclude_prob: chance per turn that a solved student ends the session.
        explain_error_prob: chance that an explanation contains a mathematical error.
        judge_noise: chance that the judge's score of a criterion is off by one point.
        misconception_rate: share of groups whose student starts with a misconception.
        lenient_gate: pass the completion gate after an unwarranted reveal too. The package rubric's
            gate needs the student to reach the answer "by their own reasoning, or after a
            legitimately warranted explanation"; here a reveal is warranted once the student has
            failed twice in a row, and the default judge fails the gate of an earlier reveal.
    """

    max_turns: int = 15
    conclude_prob: float = 0.3
    explain_error_prob: float = 0.15
    judge_noise: float = 0.1
    misconception_rate: float = 0.5
    lenient_gate: bool = False


@dataclass(frozen=True)
class Batch:
    """A batch of finished episodes.

    Attributes:
        states: (B, max_turns) int64 state index per turn (0 after the episode ended).
        actions: (B, max_turns) int64 behaviour per turn.
        alive: (B, max_turns) bool, turns that happened.
        turns: (B,) float64 tutor turns N_i.
        completed: (B,) bool, ended by ``end`` or by the student concluding (not by the turn limit).
        features: name -> (B,) float64 counts and flags the judge reads.
        scores: (B, 8) float64 noisy judge scores per dimension in ``DIMS`` order, in [0, 1].
        true_scores: (B, 8) float64 the same without judge noise (for evaluation).
    """

    states: torch.Tensor
    actions: torch.Tensor
    alive: torch.Tensor
    turns: torch.Tensor
    completed: torch.Tensor
    features: dict[str, torch.Tensor]
    scores: torch.Tensor
    true_scores: torch.Tensor


def state_index(phase: torch.Tensor, stuck: torch.Tensor, frustrated: torch.Tensor, turn: int) -> torch.Tensor:
    """(B,) index of what the tutor observes: phase, stuck, frustrated, turn bucket."""
    bucket = sum(turn >= edge for edge in TURN_BUCKETS)
    return ((phase * 2 + stuck.long()) * 2 + frustrated.long()) * (len(TURN_BUCKETS) + 1) + bucket


@dataclass
class _Student:
    """The batch's hidden student state during a rollout, each field (B,)."""

    progress: torch.Tensor
    stuck: torch.Tensor
    frustrated: torch.Tensor
    boost: torch.Tensor
    fails: torch.Tensor
    active: torch.Tensor
    alive: torch.Tensor

    @classmethod
    def start(cls, misconception: torch.Tensor) -> _Student:
        b = misconception.shape[0]
        false = torch.zeros(b, dtype=torch.bool)
        return cls(
            progress=torch.zeros(b, dtype=torch.long), stuck=false.clone(), frustrated=false.clone(),
            boost=false.clone(), fails=torch.zeros(b, dtype=torch.long), active=misconception.clone(),
            alive=torch.ones(b, dtype=torch.bool),
        )  # fmt: skip


def rollout(
    logits: torch.Tensor, ability: torch.Tensor, misconception: torch.Tensor, config: EnvConfig, gen: torch.Generator
) -> Batch:
    """Run ``B`` episodes with a tabular policy.

    Args:
        logits: (NUM_STATES, len(ACTIONS)) policy logits (no gradient needed here).
        ability: (B,) int64 index into ABILITIES.
        misconception: (B,) bool.
        config: environment settings.
        gen: random generator (all randomness of the batch).
    """
    b, t_max = ability.shape[0], config.max_turns
    f = {name: torch.zeros(b, dtype=torch.float64) for name in _FEATURES}
    st = _Student.start(misconception)
    states, actions = torch.zeros(b, t_max, dtype=torch.long), torch.zeros(b, t_max, dtype=torch.long)
    alive_log = torch.zeros(b, t_max, dtype=torch.bool)
    probs = torch.softmax(logits.detach().double(), dim=-1)
    for t in range(t_max):
        phase = torch.where(st.progress < STEPS, st.progress, STEPS + f["reflected"].long())
        s = state_index(phase, st.stuck, st.frustrated, t)
        a = torch.multinomial(probs[s], 1, generator=gen).squeeze(1)
        states[:, t], actions[:, t], alive_log[:, t] = s * st.alive, a * st.alive, st.alive
        solved_before = st.progress >= STEPS
        _count(f, st, a)
        _attempt(f, st, a, ability, solved_before, config, gen)
        _support(f, st, a, solved_before)
        _end(f, st, a, solved_before, config, gen)
    f["progress"] = st.progress.double()
    f["misconception"] = misconception.double()
    if config.lenient_gate:
        f["unwarranted_reveal"].zero_()
    raw = criteria(f)
    return Batch(
        states=states,
        actions=actions,
        alive=alive_log,
        turns=f["turns"],
        completed=f["completed"] > 0,
        features=f,
        scores=judge(raw, config.judge_noise, gen),
        true_scores=judge(raw, 0.0, gen),
    )


def _count(f: dict[str, torch.Tensor], st: _Student, a: torch.Tensor) -> None:
    live = st.alive.double()
    f["turns"] += live
    f["stuck_turns"] += live * st.stuck
    f["frustrated_turns"] += live * st.frustrated
    f["unaddressed_frustration"] += live * (st.frustrated & (a != ENCOURAGE))
    for action, name in ((QUESTION, "questions"), (HINT, "hints"), (EXPLAIN, "explains"), (CHECK, "checks")):
        f[name] += live * (a == action)


def _attempt(
    f: dict[str, torch.Tensor], st: _Student, a: torch.Tensor, ability: torch.Tensor, solved_before: torch.Tensor,
    config: EnvConfig, gen: torch.Generator,
) -> None:  # fmt: skip
    """Question, hint and explain: the student tries the next step."""
    b = a.shape[0]
    chance = torch.where(a == QUESTION, _QUESTION_P[ability], _HINT_P[ability])
    chance = chance * torch.where(st.active, 0.3, 1.0) * torch.where(st.frustrated, 0.6, 1.0)
    chance = (chance * torch.where(st.boost, 1.5, 1.0)).clamp(max=0.95)
    chance = torch.where(a == EXPLAIN, torch.where(st.active, 0.5, 1.0), chance)
    attempt = st.alive & ~solved_before & ((a == QUESTION) | (a == HINT) | (a == EXPLAIN))
    success = attempt & (torch.rand(b, generator=gen, dtype=torch.float64) < chance)
    erring = torch.rand(b, generator=gen, dtype=torch.float64) < config.explain_error_prob
    f["explain_errors"] += st.alive.double() * ((a == EXPLAIN) & erring)
    st.progress = torch.where(success, st.progress + 1, st.progress)
    failed = attempt & ~success
    st.fails = torch.where(success, 0, st.fails + failed.long())
    st.stuck = torch.where(attempt, failed, st.stuck)
    st.boost = st.boost & ~attempt
    upset = torch.rand(b, generator=gen, dtype=torch.float64) < _FRUSTRATE_P[ability]
    st.frustrated = st.frustrated | (failed & (st.fails >= 2) & upset)


def _support(f: dict[str, torch.Tensor], st: _Student, a: torch.Tensor, solved_before: torch.Tensor) -> None:
    """Reveal, check, encourage and diagnose."""
    revealing = st.alive & (a == REVEAL)
    f["revealed"] = torch.maximum(f["revealed"], revealing.double())
    f["unwarranted_reveal"] = torch.maximum(f["unwarranted_reveal"], (revealing & (st.fails < 2)).double())
    st.progress = torch.where(revealing, STEPS, st.progress)
    checking = st.alive & (a == CHECK)
    f["discovered"] = torch.maximum(f["discovered"], (checking & st.stuck).double())
    f["verified"] = torch.maximum(f["verified"], (checking & (st.progress > 0)).double())
    f["reflected"] = torch.maximum(f["reflected"], (checking & solved_before).double())
    encouraging = st.alive & (a == ENCOURAGE)
    f["encouraged"] += (encouraging & st.frustrated).double()
    f["wasted"] += (encouraging & ~st.frustrated).double()
    st.frustrated = st.frustrated & ~encouraging
    diagnosing = st.alive & (a == DIAGNOSE)
    f["cleared"] = torch.maximum(f["cleared"], (diagnosing & st.active).double())
    f["adapted"] += (diagnosing & st.stuck).double()
    f["wasted"] += (diagnosing & ~st.active & ~st.stuck).double()
    st.boost = st.boost | (diagnosing & st.stuck)
    st.active = st.active & ~diagnosing


def _end(
    f: dict[str, torch.Tensor], st: _Student, a: torch.Tensor, solved_before: torch.Tensor, config: EnvConfig,
    gen: torch.Generator,
) -> None:  # fmt: skip
    """The tutor ends the session, or a student who had solved it concludes."""
    ending = st.alive & (a == END)
    f["ended_solved"] = torch.maximum(f["ended_solved"], (ending & solved_before).double())
    concluding = st.alive & ~ending & solved_before & (
        torch.rand(a.shape[0], generator=gen, dtype=torch.float64) < config.conclude_prob
    )
    f["completed"] = torch.maximum(f["completed"], (ending | concluding).double())
    st.alive = st.alive & ~ending & ~concluding


_FEATURES = (
    "turns", "stuck_turns", "frustrated_turns", "unaddressed_frustration", "questions", "hints", "explains",
    "checks", "explain_errors", "revealed", "discovered", "verified", "reflected", "encouraged", "wasted",
    "cleared", "adapted", "ended_solved", "completed", "unwarranted_reveal",
)  # fmt: skip


def _steps(value: torch.Tensor, *edges: float) -> torch.Tensor:
    """2 when value <= edges[0], 1 when <= edges[1], else 0."""
    return torch.where(value <= edges[0], 2.0, torch.where(value <= edges[1], 1.0, 0.0)).double()


def criteria(f: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Raw criterion scores (0-2; the gate 0/1), each (B,) float64, before noise and gating."""
    two = torch.full_like(f["turns"], 2.0)
    solved, revealed = f["progress"] >= STEPS, f["revealed"] > 0
    direct = f["explains"] + 2 * f["revealed"]
    frac_q = f["questions"] / f["turns"].clamp(min=1)
    never_stuck = f["stuck_turns"] == 0
    no_leak = lambda score: torch.where(revealed, 0.0, score).double()  # noqa: E731 - a revealed answer leaks all
    return {
        "statements_correct": 2 - f["explain_errors"].clamp(max=2),
        "feedback_correct": two,
        "toward_reference": torch.where(solved, 2.0, 1.0).double(),
        "final_answer": no_leak(two),
        "key_steps": no_leak(2 - f["explains"].clamp(max=2)),
        "hint_specificity": no_leak(_steps(f["hints"], 2, 4)),
        GATE: ((f["completed"] > 0) & solved & (f["unwarranted_reveal"] == 0)).double(),
        "steps_covered": torch.round(2 * f["progress"] / STEPS),
        "mistakes_addressed": torch.where((f["misconception"] == 0) | (f["cleared"] > 0), 2.0, 0.0).double(),
        "conclusion": torch.where(f["ended_solved"] > 0, 2.0, torch.where(solved & (f["completed"] > 0), 1.0, 0.0)),
        "concise": 2 - direct.clamp(max=2),
        "clarity": two,
        "length": _steps(f["turns"], 8, 12),
        "relevance": 2 - f["wasted"].clamp(max=2),
        "questioning": torch.where(frac_q >= 0.5, 2.0, torch.where(frac_q >= 0.25, 1.0, 0.0)).double(),
        "guidance_effective": torch.where(solved & (direct == 0), 2.0, torch.where(solved & ~revealed, 1.0, 0.0)),
        "student_agency": 2 - direct.clamp(max=2),
        "discover_mistakes": torch.where(never_stuck, 1.0, 2 * f["discovered"]).double(),
        "explain_verify": 2 * f["verified"],
        "reflection": 2 * f["reflected"],
        "responds_to_difficulty": torch.where(
            never_stuck | (2 * f["adapted"] >= f["stuck_turns"]), 2.0, torch.where(f["adapted"] > 0, 1.0, 0.0)
        ).double(),
        "difficulty_fit": _steps(f["unaddressed_frustration"], 0, 2),
        "encouraging_tone": torch.where((f["frustrated_turns"] == 0) | (f["encouraged"] > 0), 2.0, 1.0).double(),
        "mistakes_as_learning": two,
    }


def judge(raw: dict[str, torch.Tensor], noise: float, gen: torch.Generator) -> torch.Tensor:
    """(B, 8) dimension scores: noisy criteria, gated by g, averaged per dimension (paper §3.2)."""
    gate = raw[GATE]
    columns = []
    for dim in DIMS:
        values = []
        for name in CRITERIA[dim]:
            score = raw[name]
            if name != GATE and noise > 0:
                flip = torch.rand(score.shape, generator=gen, dtype=torch.float64) < noise
                sign = torch.where(torch.rand(score.shape, generator=gen, dtype=torch.float64) < 0.5, -1.0, 1.0)
                score = torch.where(flip, (score + sign).clamp(0, 2), score)
            values.append(score * gate / (1.0 if name == GATE else 2.0))
        columns.append(torch.stack(values, dim=1).mean(dim=1))
    return torch.stack(columns, dim=1)
