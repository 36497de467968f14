"""Fitting the one-turn model on teachers' labels, and measuring it where the fit never looked.

The model (:mod:`pearl_verl.judge.fitted.model`): per human dimension, the mean score of two logistic
regressions (scikit-learn, ``class_weight="balanced"`` so that the rare classes count, C = :data:`C`;
:data:`MEMBERS`): one over word 1-2-grams of the candidate (TF-IDF, terms in at least :data:`MIN_DF`
responses) and of the student's last turn (terms in at least :data:`MIN_DF` conversations), the other over
the same and the counts of :data:`pearl_verl.judge.fitted.turn.COUNTS`, standardised.

The measurement (:func:`cross_validate`): k-fold cross-validation grouped by conversation history (MRBench
repeats some histories under two ids; a group is one history, so no fold tests on a history it trained on),
folds drawn with ``seed``. Per dimension, over the held-out predictions of all folds: the pairwise agreement
of ``judge-check --human`` (pairs of differently labelled responses to one conversation, a tie counted as
disagreement) with its Wilson interval, and the 3-class macro-F1 of the most probable class. In the same
folds, the plain baseline the fitted model must beat: TF-IDF 1-2-grams of the candidate and of the student's
last turn, nothing else, the same regression.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pearl_verl.data.mrbench import HUMAN_DIMENSIONS, HumanConversation
from pearl_verl.errors import InputError
from pearl_verl.judge.fitted.model import FIELDS, FORMAT, VERSION, feature_matrix
from pearl_verl.judge.fitted.turn import COUNTS, TurnContext, turn_fields
from pearl_verl.judge.human_agreement import MAPPED, REVEALING, RatedResponse, macro_f1, pairwise_agreement
from pearl_verl.judge.one_turn import problem_of
from pearl_verl.stats import wilson_ci

C = 1.0
"""Inverse regularisation strength, fixed before the cross-validated measurement (0.3, 1 and 3 measured
within a point of each other on MRBench V2)."""
MIN_DF = 2
"""A term must occur in this many training responses (for the student's turn: conversations) to get a weight:
one-off words are noise, and the file stays small."""
FOLDS = 5

FITTED = "fitted"
BASELINE = "baseline"


def class_values(dimension: str) -> list[float]:
    """The score each class of ``dimension`` counts for: 0, 0.5, 1; Revealing: either "Yes" 0, "No" 1."""
    if dimension == REVEALING:
        no = HUMAN_DIMENSIONS[REVEALING].index("No")
        return [1.0 if c == no else 0.0 for c in range(3)]
    return [0.0, 0.5, 1.0]


@dataclass(frozen=True)
class Example:
    """One labelled response: its conversation (row), history group, what the model reads, its classes."""

    row: int
    group: str
    context: TurnContext
    classes: Mapping[str, int]


def examples_of(conversations: Sequence[HumanConversation]) -> list[Example]:
    """Every response of ``conversations`` as an :class:`Example`."""
    out = []
    for conversation in conversations:
        problem = problem_of(conversation)
        group = hashlib.sha1(conversation.history.encode()).hexdigest()
        for response in conversation.responses:
            context = TurnContext(conversation.turns, response.text.strip(), problem.reference_solution,
                                  problem.answer)
            out.append(Example(conversation.index, group, context, response.classes))
    return out


def _vectorizer(min_df: int) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=min_df)


class Features:
    """The fitted model's feature families, fitted on training examples (see the module docstring)."""

    def __init__(self, train: Sequence[Example], counts: bool = True, min_df: int = MIN_DF) -> None:
        import numpy as np
        from sklearn.preprocessing import StandardScaler

        values = [turn_fields(e.context) for e in train]
        # The student's last turn is shared by every response to a conversation: its terms count once a conversation.
        self.vectorizers = {name: _vectorizer(min_df).fit(list(dict.fromkeys(v[FIELDS.index(name)] for v in values))
                                                          if name == "last" else [v[0] for v in values])
                            for name in FIELDS}
        self.scaler = StandardScaler().fit(np.array([v[2] for v in values])) if counts else None

    def transform(self, examples: Sequence[Example]) -> Any:
        scaler = self.scaler
        return feature_matrix(self.vectorizers, [e.context for e in examples],
                              *((scaler.mean_, scaler.scale_) if scaler is not None else ()))


def _regression(seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, class_weight="balanced", max_iter=5000, random_state=seed)


MEMBERS: tuple[bool, ...] = (True, False)
"""The fitted model's members, by whether they read the counts: both read the same n-grams, and their scores
are averaged. Measured on MRBench V2 (3 fold draws), the pair is ahead of the plain baseline on every
dimension, which neither member alone is: the counts lift Mistake_Location, Providing_Guidance and
Coherence; the n-grams alone keep Mistake_Identification."""


def _labelled(examples: Sequence[Example], dimension: str) -> list[int]:
    return [i for i, e in enumerate(examples) if dimension in e.classes]


def _member_matrices(features: Features, examples: Sequence[Example]) -> list[Any]:
    """The feature matrix of each member (the counts are the last columns; a member without them drops them)."""
    x = features.transform(examples)
    return [x if counts else x[:, : x.shape[1] - len(COUNTS)] for counts in MEMBERS]


def _fit_dimension(xs: Sequence[Any], examples: Sequence[Example], dimension: str, seed: int) -> list[Any]:
    import numpy as np

    rows = _labelled(examples, dimension)
    y = np.array([examples[i].classes[dimension] for i in rows])
    return [_regression(seed).fit(x[rows], y) for x in xs]


def _expected(models: Sequence[Any], xs: Sequence[Any], dimension: str) -> tuple[Any, Any, Any]:
    """The members' mean expected class value, their mean class probabilities, and the classes."""
    import numpy as np

    values = class_values(dimension)
    proba = [m.predict_proba(x) for m, x in zip(models, xs)]
    scores = np.mean([p @ np.array([values[c] for c in m.classes_]) for m, p in zip(models, proba)], axis=0)
    return scores, np.mean(proba, axis=0), models[0].classes_


def fit_params(examples: Sequence[Example], seed: int, trained_on: Mapping[str, Any],
               report: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The parameters of the model fitted on every example (the file :mod:`.model` reads)."""
    import sklearn

    from pearl_verl.judge.fitted.model import encode

    features = Features(examples)
    xs = _member_matrices(features, examples)
    members: list[dict[str, Any]] = [{"counts": counts, "dimensions": {}} for counts in MEMBERS]
    for dimension in MAPPED:
        values = class_values(dimension)
        for member, model in zip(members, _fit_dimension(xs, examples, dimension, seed)):
            member["dimensions"][dimension] = {
                "classes": model.classes_.tolist(),
                "values": [values[c] for c in model.classes_],
                "coef": encode(model.coef_),
                "intercept": model.intercept_.tolist(),
            }
    return {
        "format": FORMAT,
        "version": VERSION,
        "trained_on": dict(trained_on),
        "seed": seed,
        "model": {"C": C, "min_df": MIN_DF, "class_weight": "balanced", "members": len(MEMBERS),
                  "scikit_learn": sklearn.__version__},
        "cross_validation": dict(report or {}),
        "vectorizers": {
            name: {"ngram_range": [1, 2], "sublinear_tf": True, "terms": v.get_feature_names_out().tolist(),
                   "idf": encode(v.idf_)}
            for name, v in features.vectorizers.items()
        },
        "counts": {"names": list(COUNTS), "mean": features.scaler.mean_.tolist(),
                   "scale": features.scaler.scale_.tolist()},
        "members": members,
    }


@dataclass(frozen=True)
class DimensionCV:
    """One model's cross-validated result on one dimension."""

    agreed: int
    pairs: int
    ties: int
    macro_f1: float | None
    responses: int

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.pairs if self.pairs else None

    def to_dict(self) -> dict[str, Any]:
        estimate = wilson_ci(self.agreed, self.pairs) if self.pairs else None
        return {"agreement": estimate.to_dict() if estimate else None, "agreed": self.agreed, "pairs": self.pairs,
                "ties": self.ties, "macro_f1": self.macro_f1, "responses": self.responses}


def cross_validate(
    examples: Sequence[Example], seed: int = 0, folds: int = FOLDS, on_fold: Callable[[], None] | None = None,
) -> dict[str, dict[str, DimensionCV]]:
    """Held-out predictions of the fitted model and of the baseline, per dimension (module docstring).

    Returns:
        ``fitted`` / ``baseline`` -> dimension -> :class:`DimensionCV`.

    Raises:
        InputError: fewer distinct conversation histories than folds.
    """
    import numpy as np
    from sklearn.model_selection import GroupKFold

    groups = np.array([e.group for e in examples])
    if len(set(groups)) < folds:
        raise InputError(f"{len(set(groups))} distinct conversation histories cannot be split into {folds} folds; "
                         "give fewer --folds or more conversations.")
    families = (FITTED, BASELINE)
    scores = {f: {d: [None] * len(examples) for d in MAPPED} for f in families}
    predicted = {f: {d: [None] * len(examples) for d in MAPPED} for f in families}
    for train, test in GroupKFold(n_splits=folds, shuffle=True, random_state=seed).split(groups, groups=groups):
        train_ex, test_ex = [examples[i] for i in train], [examples[i] for i in test]
        fitted = Features(train_ex)
        baseline = Features(train_ex, counts=False, min_df=1)
        matrices = {FITTED: (_member_matrices(fitted, train_ex), _member_matrices(fitted, test_ex)),
                    BASELINE: ([baseline.transform(train_ex)], [baseline.transform(test_ex)])}
        for family, (x_train, x_test) in matrices.items():
            for dimension in MAPPED:
                models = _fit_dimension(x_train, train_ex, dimension, seed)
                score, proba, classes = _expected(models, x_test, dimension)
                for j, i in enumerate(test):
                    scores[family][dimension][i] = float(score[j])
                    predicted[family][dimension][i] = int(classes[proba[j].argmax()])
        if on_fold is not None:
            on_fold()
    return {family: {d: _measure(examples, d, scores[family][d], predicted[family][d]) for d in MAPPED}
            for family in families}


def _measure(examples: Sequence[Example], dimension: str, scores: Sequence[float | None],
             predicted: Sequence[int | None]) -> DimensionCV:
    rated = [RatedResponse(e.row, {dimension: e.classes[dimension]}, {dimension: s})
             for e, s in zip(examples, scores) if dimension in e.classes and s is not None]
    count = pairwise_agreement(rated, dimension)
    labelled = _labelled(examples, dimension)
    f1 = macro_f1([examples[i].classes[dimension] for i in labelled], [predicted[i] for i in labelled])
    return DimensionCV(count.agreed, count.pairs, count.ties, f1, len(labelled))
