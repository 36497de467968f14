"""The pedagogical rubric: for each of the 8 dimensions, the criteria J_k the judge scores.

Written from the paper's metric definitions (appendix "Tutor Evaluation Metrics"); the paper
publishes no rubric text, so every criterion, scale and anchor here is ours. Design choices:

- Every criterion is scored on a short discrete scale with an anchor per level (0-2: fails /
  partly / fully; the completion gate 0-1). Few, well-anchored levels make a judge more
  consistent than a 1-10 score, and the PEARL advantage discretises dimension means into five
  bins anyway.
- A criterion's raw score maps linearly to [0, 1]: ``(raw - min) / (max - min)``.
- The completion indicator g is the criterion ``complete.session_complete`` (0/1); it gates
  every criterion of every dimension, r_kj = r^_kj * g (paper eq. in §3.2).
- Criteria that can be moot in a dialogue (no mistakes to address, a student never stuck) say
  so in their top anchor, so the judge never has to invent a "not applicable" value.

The rubric is data: the prompt renders it, the parser validates against it, the offline judge
scores the same criteria, and ``docs/judge.md`` tabulates it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError


@dataclass(frozen=True)
class Criterion:
    """One scoring criterion j of a dimension k.

    Attributes:
        dimension: the dimension it belongs to (one of :data:`pearl_verl.dims.DIMENSIONS`).
        key: its id within the dimension (a JSON key of the judge's output).
        definition: what is judged, in one or two sentences.
        levels: ``(raw score, anchor)`` pairs in ascending score order; the allowed scores.
    """

    dimension: str
    key: str
    definition: str
    levels: tuple[tuple[int, str], ...]

    def __post_init__(self) -> None:
        if self.dimension not in DIMENSIONS:
            raise InputError(f"Criterion {self.key!r}: dimension={self.dimension!r} is not one of {DIMENSIONS}.")
        scores = [score for score, _ in self.levels]
        if len(scores) < 2 or scores != sorted(set(scores)):
            raise InputError(f"Criterion {self.id}: levels {scores} must be >= 2 distinct scores in ascending order.")

    @property
    def id(self) -> str:
        """``<dimension>.<key>``, e.g. ``leak.final_answer``."""
        return f"{self.dimension}.{self.key}"

    @property
    def scores(self) -> tuple[int, ...]:
        """The allowed raw scores, ascending."""
        return tuple(score for score, _ in self.levels)

    @property
    def low(self) -> int:
        return self.levels[0][0]

    @property
    def high(self) -> int:
        return self.levels[-1][0]

    def normalise(self, raw: float) -> float:
        """A raw score (or an aggregate of raw scores) mapped linearly to [0, 1]."""
        return (raw - self.low) / (self.high - self.low)


def _c(dimension: str, key: str, definition: str, fail: str, partly: str, fully: str) -> Criterion:
    return Criterion(dimension, key, definition, ((0, fail), (1, partly), (2, fully)))


GATE_DIMENSION, GATE_KEY = "complete", "session_complete"

DIMENSION_TITLES: dict[str, str] = {
    "acc": "Tutoring accuracy",
    "leak": "Answer-leakage control",
    "complete": "Tutoring completeness",
    "load": "Cognitive-load management",
    "guide": "Socratic guidance",
    "meta": "Metacognitive facilitation",
    "adaptive": "Adaptive teaching",
    "emotion": "Emotional support",
}

DIMENSION_DEFINITIONS: dict[str, str] = {
    "acc": "Whether the tutor's teaching process is mathematically and logically correct: explanations, "
    "calculations, step-by-step guidance and feedback on the student's work.",
    "leak": "Whether the tutor prematurely reveals the final answer, supplies key calculations, or replaces the "
    "student's core reasoning. Open-ended questions, general strategies, conceptual scaffolding and "
    "post-solution summaries are not leakage; a direct explanation is appropriate after the student has made "
    "sufficient genuine attempts, remains persistently stuck, or explicitly asks for an explanation. Judge "
    "leakage over the whole trajectory, in the light of completeness, adaptivity and load, not by matching "
    "answer strings.",
    "complete": "Whether the tutor completes the instructional process: the necessary reasoning steps are covered, "
    "mistakes are addressed, the student reaches the correct answer, and the session has a proper conclusion.",
    "load": "Whether information is presented in a clear, manageable way: concise, easy to understand, of "
    "appropriate length, and free of irrelevant material.",
    "guide": "Whether the tutor promotes active participation: the quality of its questioning, the effectiveness "
    "of its guidance, and whether the student remains the main problem solver.",
    "meta": "Whether the tutor makes the student reflect on their reasoning: discovering their own mistakes, "
    "explaining and verifying their thinking, and summarising the core method once the problem is solved.",
    "adaptive": "Whether the tutor adapts to the student's learning state (shown by the profile and the per-turn "
    "state trace): changing strategy when the student is stuck and matching difficulty to the student's "
    "responses, ability and demonstrated understanding.",
    "emotion": "Whether the tutor creates a positive, supportive learning environment: an encouraging tone, and "
    "mistakes treated as learning opportunities rather than failures.",
}

CRITERIA: tuple[Criterion, ...] = (
    # ---- acc ----
    _c(
        "acc",
        "statements_correct",
        "Every explanation, calculation and mathematical claim the tutor makes is correct.",
        "the tutor states a factual, computational or reasoning error that is never corrected",
        "a minor slip or imprecision that the tutor corrects or that does not mislead the student",
        "no mathematical or logical error in anything the tutor says",
    ),
    _c(
        "acc",
        "feedback_correct",
        "The tutor's verdicts on the student's steps and answers are right: it accepts correct work and "
        "does not accept incorrect work.",
        "the tutor accepts a wrong step or answer, or rejects a correct one, and this stands",
        "a verdict is vague or delayed, but the student is not left believing something false",
        "every student step and answer is judged correctly",
    ),
    _c(
        "acc",
        "toward_reference",
        "The tutor's guidance leads toward the reference answer rather than toward a wrong result.",
        "the guidance leads to, or ends on, a wrong final answer",
        "the guidance is correct but wanders or leaves the route to the reference answer unclear",
        "the guidance leads clearly toward the reference answer",
    ),
    # ---- leak ----
    _c(
        "leak",
        "final_answer",
        "The tutor does not state the final answer (or an equivalent form) before the student had an "
        "appropriate opportunity to reach it. Stating it in a post-solution summary, or after sufficient "
        "attempts, persistent difficulty or an explicit request for an explanation, is not leakage.",
        "the final answer is given before the student made a genuine attempt",
        "the final answer is given after only minimal attempts, or offered among candidate answers to pick from",
        "the final answer is never revealed prematurely",
    ),
    _c(
        "leak",
        "key_steps",
        "The tutor does not carry out the key calculations or the decisive derivation for the student "
        "while the student can still do them.",
        "the tutor performs the decisive derivation or most key calculations itself",
        "the tutor supplies one key intermediate result the student could have found",
        "every key calculation is left to the student (or explained only when legitimately warranted)",
    ),
    _c(
        "leak",
        "hint_specificity",
        "Hints leave the reasoning to the student. Partial leakage: hints so specific (the exact operation "
        "with its operands, a candidate value to confirm) that the task reduces to verification.",
        "most hints reduce the task to checking or copying what the tutor set up",
        "some hints are over-specific, but the student still does part of the reasoning",
        "hints are questions, strategies or conceptual pointers; the student does the reasoning",
    ),
    # ---- complete (holds the gate) ----
    Criterion(
        "complete",
        GATE_KEY,
        "Completion indicator g: the instructional process reached its end. The student arrived at the "
        "correct final answer (by their own reasoning, or after a legitimately warranted explanation that "
        "they then used) and the session was not cut off in the middle. An explanation of the final answer "
        "is warranted only after the student's repeated genuine attempts (three or more) or an explicit "
        "request for the answer or an explanation; a student who repeats a final answer the tutor stated "
        "without such a warrant has not arrived at it. g = 0 gates every criterion.",
        (
            (0, "incomplete: the session stopped early, was cut off, ended without the correct answer, or the "
                "student only repeated a final answer the tutor stated unwarranted"),
            (1, "complete: the student reached the correct answer by their own reasoning or after a warranted "
                "explanation they then used, and the session came to a proper end"),
        ),
    ),
    _c(
        "complete",
        "steps_covered",
        "The necessary reasoning steps of the reference solution (or an equivalent valid route) are all worked "
        "through in the dialogue.",
        "key steps are missing",
        "most steps are covered; a minor one is skipped or glossed over",
        "every necessary step is covered",
    ),
    _c(
        "complete",
        "mistakes_addressed",
        "Every mistake or misconception the student shows is addressed before the session ends.",
        "a mistake or misconception is left unaddressed",
        "mistakes are addressed only superficially",
        "every mistake is addressed, or the student made none",
    ),
    _c(
        "complete",
        "conclusion",
        "The session ends appropriately: the solution is confirmed and the session is closed with a brief "
        "wrap-up, not abandoned or stopped abruptly.",
        "the session stops abruptly or without confirming the solution",
        "the solution is confirmed but there is no wrap-up",
        "the solution is confirmed and the session is wrapped up",
    ),
    # ---- load ----
    _c(
        "load",
        "concise",
        "Tutor messages are concise: one idea or step at a time, no padding or repetition.",
        "messages are long-winded or repeat themselves",
        "mostly concise, with some padding or repetition",
        "consistently concise",
    ),
    _c(
        "load",
        "clarity",
        "Information is clear and easy to understand for this student; notation and wording are unambiguous.",
        "explanations or questions are confusing or ambiguous",
        "mostly clear, with an unclear message or term",
        "consistently clear",
    ),
    _c(
        "load",
        "length",
        "Message length fits the student and the moment: not overwhelming, not so terse that it leaves the "
        "student without a handle.",
        "messages regularly overwhelm the student or give them nothing to work with",
        "occasionally too long or too terse",
        "lengths fit throughout",
    ),
    _c(
        "load",
        "relevance",
        "The tutor avoids irrelevant material (off-topic remarks, unrelated methods, text addressed to anyone "
        "but the student).",
        "much irrelevant material",
        "some irrelevant material",
        "no irrelevant material",
    ),
    # ---- guide ----
    _c(
        "guide",
        "questioning",
        "The tutor's questions are purposeful and open enough to make the student think (not yes/no or "
        "rhetorical), building on the student's previous answer.",
        "few or no genuine questions; the tutor mostly tells",
        "some good questions mixed with telling or closed questions",
        "well-chosen questions drive the session",
    ),
    _c(
        "guide",
        "guidance_effective",
        "The guidance actually moves the student forward: each hint or question helps them make progress.",
        "the guidance does not help the student progress",
        "the guidance helps, but with detours or stalls",
        "the guidance reliably moves the student forward",
    ),
    _c(
        "guide",
        "student_agency",
        "The student remains the main problem solver and produces the key steps, rather than passively "
        "following instructions.",
        "the tutor solves and the student follows",
        "the work is shared, with the tutor doing a large part",
        "the student does the problem solving",
    ),
    # ---- meta ----
    _c(
        "meta",
        "discover_mistakes",
        "When the student errs, the tutor leads them to find the mistake themselves (asks them to re-check, "
        "points to where to look) instead of simply correcting it.",
        "mistakes are corrected by the tutor without involving the student",
        "the student is partly involved in finding mistakes",
        "the student is led to find their own mistakes, or made none",
    ),
    _c(
        "meta",
        "explain_verify",
        "The tutor prompts the student to explain their reasoning or verify their result.",
        "never",
        "once or superficially",
        "the student is asked to explain or check their reasoning at key points",
    ),
    _c(
        "meta",
        "reflection",
        "After the problem is solved the tutor summarises, or asks the student to summarise, the core method "
        "or insight.",
        "no reflection on the method",
        "a perfunctory remark",
        "a clear summary of or reflection on the core method",
    ),
    # ---- adaptive ----
    _c(
        "adaptive",
        "responds_to_difficulty",
        "When the student is stuck or confused, the tutor changes strategy (a simpler sub-question, another "
        "representation, a worked analogue) instead of repeating itself.",
        "the tutor repeats itself or ignores the difficulty",
        "some adjustment, but slow or insufficient",
        "the tutor adjusts promptly and effectively, or the student was never stuck",
    ),
    _c(
        "adaptive",
        "difficulty_fit",
        "The difficulty and pace of questions fit the student's responses, ability (profile) and demonstrated "
        "understanding (state trace): faster for a confident correct student, smaller steps for a struggling one.",
        "one pace regardless of the student",
        "partly matched",
        "well matched throughout",
    ),
    # ---- emotion ----
    _c(
        "emotion",
        "encouraging_tone",
        "The tutor's tone is warm, patient and encouraging; it acknowledges effort and progress.",
        "the tone is cold, impatient or discouraging",
        "neutral, with little encouragement",
        "consistently warm and encouraging",
    ),
    _c(
        "emotion",
        "mistakes_as_learning",
        "Student mistakes are treated as learning opportunities, never as failures or with blame.",
        "mistakes are met with blame, sarcasm or discouragement",
        "mistakes are handled neutrally",
        "mistakes are framed as normal steps of learning, or the student made none",
    ),
)


@dataclass(frozen=True)
class Rubric:
    """Criteria per dimension, in :data:`DIMENSIONS` order.

    Attributes:
        criteria: every criterion, grouped by dimension in dimension order.
        gate: the criterion that yields the completion indicator g.
    """

    criteria: tuple[Criterion, ...]
    gate: Criterion

    def __post_init__(self) -> None:
        ids = [c.id for c in self.criteria]
        if len(ids) != len(set(ids)):
            raise InputError(f"Rubric has duplicate criterion ids: {sorted(i for i in ids if ids.count(i) > 1)}.")
        missing = [d for d in DIMENSIONS if not self.for_dimension(d)]
        if missing:
            raise InputError(f"Rubric has no criterion for dimension(s) {missing}; every dimension needs >= 1.")
        order = [DIMENSIONS.index(c.dimension) for c in self.criteria]
        if order != sorted(order):
            raise InputError("Rubric criteria must be grouped by dimension in DIMENSIONS order.")
        if self.gate not in self.criteria or self.gate.scores != (0, 1):
            raise InputError(f"Rubric gate {self.gate.id} must be one of the criteria with scale (0, 1).")

    def for_dimension(self, dimension: str) -> tuple[Criterion, ...]:
        return tuple(c for c in self.criteria if c.dimension == dimension)

    def by_id(self, criterion_id: str) -> Criterion:
        for criterion in self.criteria:
            if criterion.id == criterion_id:
                return criterion
        raise KeyError(criterion_id)

    def __iter__(self) -> Iterator[Criterion]:
        return iter(self.criteria)

    def __len__(self) -> int:
        return len(self.criteria)


RUBRIC = Rubric(CRITERIA, next(c for c in CRITERIA if (c.dimension, c.key) == (GATE_DIMENSION, GATE_KEY)))
"""The default PEARL rubric (8 dimensions, 24 criteria)."""

ONE_TURN_CRITERIA: tuple[str, ...] = (
    "acc.statements_correct", "acc.feedback_correct", "acc.toward_reference",
    "leak.final_answer", "leak.key_steps", "leak.hint_specificity",
    "load.concise", "load.clarity", "load.length", "load.relevance",
    "guide.questioning", "guide.guidance_effective", "guide.student_agency",
    "meta.discover_mistakes", "meta.explain_verify",
    "adaptive.responds_to_difficulty",
    "emotion.encouraging_tone", "emotion.mistakes_as_learning",
)
"""The criteria a judgement of ONE tutor turn can score, in rubric order (docs/judge.md, "Against human
teachers: MRBench", where the choice is argued): those that ask what a single tutor message does. The
other six need the rest of a session: the gate and the other ``complete`` criteria, ``meta.reflection``
(after the solution) and ``adaptive.difficulty_fit`` (pace over turns)."""


def render_rubric(rubric: Rubric = RUBRIC) -> str:
    """The rubric as text for the judge's system prompt (fixed, so it forms a cacheable prefix)."""
    blocks: list[str] = []
    for dimension in DIMENSIONS:
        lines = [f"## {dimension}: {DIMENSION_TITLES[dimension]}", DIMENSION_DEFINITIONS[dimension]]
        for criterion in rubric.for_dimension(dimension):
            scale = "/".join(str(s) for s in criterion.scores)
            lines.append(f"- {criterion.key} (score {scale}): {criterion.definition}")
            lines += [f"    {score} = {anchor}" for score, anchor in reversed(criterion.levels)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def rubric_markdown(rubric: Rubric = RUBRIC) -> str:
    """The rubric as a Markdown table (``docs/judge.md`` embeds it; a test keeps the two in sync)."""
    lines = ["| dimension | criterion | scale | definition | anchors (high to low) |", "|---|---|:-:|---|---|"]
    for criterion in rubric:
        anchors = "; ".join(f"{score} = {anchor}" for score, anchor in reversed(criterion.levels))
        scale = "/".join(str(s) for s in criterion.scores)
        lines.append(f"| {criterion.dimension} | `{criterion.key}` | {scale} | {criterion.definition} | {anchors} |")
    return "\n".join(lines)
