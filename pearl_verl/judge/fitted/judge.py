"""``FittedJudge``: the CPU judge whose one-turn criteria were learned from teachers' labels.

Backend ``fitted`` of :class:`~pearl_verl.judge.judge_config.JudgeConfig`. It returns the same
:class:`~pearl_verl.judge.judge_contract.JudgeResult` as every judge (24 criteria, the gate, 8 gated dimension means):

- **one-turn criteria from the model** (:data:`FITTED_MAPPING`): each tutor turn that answers the student is
  scored by the model of :mod:`.model` given the conversation before it, and a criterion's score is the mean
  over the turns it applies to: the mistake criteria (``acc.feedback_correct``, ``meta.discover_mistakes``)
  over the turns that answer a wrong attempt (none: the heuristic's "or the student made none"), a turn that
  accepts the wrong attempt (:func:`~pearl_verl.judge.features.accepts_wrong`: "Well done!" with no pointer to the
  mistake) scoring 0, the rubric's level for accepting wrong work, whatever the model reads in its words (in a
  whole dialogue, whose student's state trace says which attempts were wrong),
  ``leak.final_answer`` over the turns before the student solved it (and never above the heuristic's exact
  check against the reference answer), the others over every turn that answers the student (the tone too after
  false praise: MRBench's teachers call praise encouraging whether or not the attempt was right, and capping it as
  the heuristic does took this judge's Tutor_Tone agreement from 98% to 58%);
- **the rest of the rubric as the heuristic scores it** (:mod:`pearl_verl.judge.offline`): the completion
  gate, the session-level criteria, leaks of key steps and over-specific hints, arithmetic errors;
- **no credit for what is not a turn of tutoring** (:mod:`pearl_verl.judge.tutoring_turns`, as for the
  heuristic): a tutor turn that is not language or copies the student or the problem scores 0 on every model
  criterion, and the heuristic's criteria are read and scaled as that module says.

Judging one candidate turn (``judged_from`` > 0, as ``judge-check --human`` does), every model criterion
applies to the candidate: the conversations of MRBench and BEA 2025 end where the student erred or is
confused, which the heuristic's reading of a wrong attempt (a number that is no key result) does not always see.

It is a CPU judge, not the paper's (a finetuned Qwen3-32B): its model reads n-grams and counts of one turn
and has seen only the label file it was fitted on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from pearl_verl.dialogue.episode import STUDENT, EpisodeRecord
from pearl_verl.judge.features import DialogueFeatures
from pearl_verl.judge.fitted.model import SHIPPED, TurnModel, load_model
from pearl_verl.judge.fitted.turn import TurnContext
from pearl_verl.judge.offline import HeuristicJudge
from pearl_verl.judge.rubric import RUBRIC, Rubric
from pearl_verl.judge.tutoring_turns import TutoringTurns

FITTED_MAPPING: Mapping[str, tuple[str, ...] | None] = MappingProxyType({
    "Mistake_Identification": ("acc.feedback_correct",),
    "Mistake_Location": ("meta.discover_mistakes",),
    "Revealing_of_the_Answer": ("leak.final_answer",),
    "Providing_Guidance": ("guide.guidance_effective",),
    "Actionability": ("guide.questioning",),
    "Coherence": ("load.relevance",),
    "Tutor_Tone": ("emotion.encouraging_tone",),
    "humanlikeness": None,
})
"""Human dimension -> the criterion its model scores: the first criterion of each row of docs/judge.md's
mapping, so that ``leak.hint_specificity`` and ``load.clarity`` keep the rubric's own reading."""

MISTAKE_CRITERIA = frozenset({"acc.feedback_correct", "meta.discover_mistakes"})
LEAK_CRITERION = "leak.final_answer"


class FittedJudge(HeuristicJudge):
    """The fitted CPU judge (see the module docstring).

    Args:
        params: the parameters file (default: the shipped fit on MRBench V2).
        rubric: the rubric; every criterion needs a heuristic rule.
    """

    name = "fitted"
    human_mapping = FITTED_MAPPING

    def __init__(self, params: Path | None = None, rubric: Rubric = RUBRIC) -> None:
        super().__init__(rubric)
        self.model: TurnModel = load_model(params or SHIPPED)
        self._by_criterion = {c[0]: d for d, c in FITTED_MAPPING.items() if c and d in self.model.dimensions}

    def overrides(self, episode: EpisodeRecord, judged_from: int, features: DialogueFeatures,
                  turns: TutoringTurns) -> dict[str, Callable[[float, str], tuple[float, str]]]:
        """The model criteria, from the model's mean over the turns each applies to (module docstring)."""
        out: dict[str, Callable[[float, str], tuple[float, str]]] = {}
        for criterion, (value, applies) in self._fitted(episode, judged_from, features, turns).items():
            model = f"fitted: {self._by_criterion[criterion]} model, mean {value:.2f} over tutor turn(s) {applies}"
            if criterion == LEAK_CRITERION:  # the exact check against the reference answer stays a ceiling
                out[criterion] = lambda score, why, v=value, m=model: (min(score, v), f"{m}; {why}")
            else:
                out[criterion] = lambda score, why, v=value, m=model: (v, m)
        return out

    def _fitted(self, episode: EpisodeRecord, judged_from: int, features: DialogueFeatures,
                turns: TutoringTurns) -> dict[str, tuple[float, list[int]]]:
        """criterion -> (mean model score over the turns it applies to, those turns); absent: not applicable."""
        record, problem = episode.turns, episode.problem
        answering = [i for i in turns.judged if i > 0 and any(u.role == STUDENT for u in record[:i])]
        if not answering:
            return {}
        invalid = set(turns.invalid)
        valid = [i for i in answering if i not in invalid]
        contexts = [TurnContext([(t.role, t.text) for t in record[:i]], record[i].text, problem.reference_solution,
                                problem.answer) for i in valid]
        scored = dict(zip(valid, self.model.score(contexts)))
        after_wrong = {i + 1 for i in features.wrong_turns}
        accepting = set(features.accepting_turns)
        solved_at = features.solved_at if features.solved_at is not None else len(record)
        out = {}
        for criterion, dimension in self._by_criterion.items():
            if judged_from > 0:  # one candidate: MRBench's conversations end on a mistake or confusion
                applies = answering
            elif criterion in MISTAKE_CRITERIA:
                applies = [i for i in answering if i in after_wrong]
            elif criterion == LEAK_CRITERION:
                applies = [i for i in answering if i < solved_at]
            else:
                applies = answering
            if applies:
                zero = invalid | (accepting if criterion in MISTAKE_CRITERIA and judged_from == 0 else set())
                values = [0.0 if i in zero else scored[i][dimension] for i in applies]
                out[criterion] = (sum(values) / len(values), applies)
        return out
