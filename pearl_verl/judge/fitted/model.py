"""The fitted one-turn model: parameters in a JSON file with a checksum, applied with scikit-learn.

The file holds plain numbers, never a pickle: each vectorizer's terms and idf weights, the counts' scaling,
and per member and human dimension a logistic regression's classes, coefficients and intercepts (the long
arrays as base64 of little-endian float16: about 1 MB instead of 4, and a score moves by less than 1e-3).
Loading rebuilds the scikit-learn objects from them (``TfidfVectorizer(vocabulary=...)`` with its ``idf_``;
a ``LogisticRegression`` with ``coef_``, ``intercept_``, ``classes_``), so fitting and judging go through
the same tokenizer and arithmetic. ``FILE.sha256`` beside it holds the file's SHA-256; a file that does not match
it (cut short, edited by hand) is refused, naming both.

A dimension's score for a candidate is the expected value of its predicted class on [0, 1], averaged over the
members (:data:`pearl_verl.judge.fitted.fit.MEMBERS`): classes 0, 1, 2 (worst to best,
:data:`pearl_verl.data.mrbench.HUMAN_DIMENSIONS`) count 0, 0.5 and 1, so two candidates tie only when the
model sees them alike. On Revealing_of_the_Answer "No" counts 1 and either "Yes" 0: the only comparison its
pairs make.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_verl.errors import InputError
from pearl_verl.judge.fitted.turn import COUNTS, TurnContext, turn_fields
from pearl_verl.write_whole import write_whole

FORMAT = "pearl_verl.fitted_judge"
VERSION = 1
SHIPPED = Path(__file__).resolve().parents[2] / "resources" / "judge" / "fitted_mrbench_v2.json"
"""The parameters fitted on the shipped MRBench V2 (all 200 conversations) by ``pearl-verl judge-fit``."""

FIELDS = ("text", "last")
"""The texts a candidate gives the vectorizers: the candidate turn, the student's last turn."""


def feature_matrix(vectorizers: Mapping[str, Any], contexts: Sequence[TurnContext], count_mean: Any = None,
                   count_scale: Any = None) -> Any:
    """The n-grams of each of :data:`FIELDS`, then the counts standardised (none when ``count_mean`` is None):
    the one feature matrix of fitting and judging alike."""
    import numpy as np
    from scipy.sparse import csr_matrix, hstack

    fields = [turn_fields(c) for c in contexts]
    parts = [vectorizers[name].transform([f[i] for f in fields]) for i, name in enumerate(FIELDS)]
    if count_mean is not None:
        parts.append(csr_matrix((np.array([f[2] for f in fields], dtype=float) - count_mean) / count_scale))
    return hstack(parts).tocsr()


def encode(array: Any) -> dict[str, Any]:
    """A float array as ``{"shape", "f2"}``: base64 of its little-endian float16 values."""
    import numpy as np

    values = np.asarray(array, dtype=float)
    return {"shape": list(values.shape), "f2": base64.b64encode(values.astype("<f2").tobytes()).decode("ascii")}


def decode(value: Mapping[str, Any]) -> Any:
    """The float64 array :func:`encode` wrote."""
    import numpy as np

    return np.frombuffer(base64.b64decode(value["f2"]), dtype="<f2").astype(float).reshape(value["shape"])


def checksum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class TurnModel:
    """Scores candidate tutor turns on the human dimensions it was fitted on.

    Attributes:
        dimensions: the human dimensions, in the file's order.
        meta: what the file says of its fit (label file and checksum, seed, library versions, CV report).
        path: where it was read from.
    """

    dimensions: tuple[str, ...]
    meta: Mapping[str, Any]
    path: Path
    _vectorizers: Mapping[str, Any]
    _count_mean: Any
    _count_scale: Any
    _members: Sequence[tuple[bool, Mapping[str, tuple[Any, Any]]]]  # (reads counts, dimension -> (model, values))

    def matrix(self, contexts: Sequence[TurnContext]) -> Any:
        """The sparse feature matrix of ``contexts`` (:func:`feature_matrix`)."""
        return feature_matrix(self._vectorizers, contexts, self._count_mean, self._count_scale)

    def score(self, contexts: Sequence[TurnContext]) -> list[dict[str, float]]:
        """Per context, dimension -> score on [0, 1] (the expected class value, see the module docstring).

        Each member's logistic regressions of all dimensions are applied as one product with their stacked
        coefficients, then a softmax per dimension: scikit-learn's multinomial ``predict_proba``, without its
        per-call checks, which cost more than the arithmetic on a dialogue's few turns (a test holds the two equal).
        """
        import numpy as np

        if not contexts:
            return []
        x = self.matrix(contexts)
        inputs = {True: x, False: x[:, : x.shape[1] - len(COUNTS)]}
        total = np.zeros((len(contexts), len(self.dimensions)))
        for counts, stacked in self._stacked:
            logits = np.asarray(inputs[counts] @ stacked.coef.T) + stacked.intercept
            for k, (start, stop, values) in enumerate(stacked.blocks):
                block = logits[:, start:stop]
                if stop - start == 1:  # two classes: one logit, the second class's probability
                    block = np.hstack([-block, block]) / 2
                block = np.exp(block - block.max(axis=1, keepdims=True))
                total[:, k] += (block / block.sum(axis=1, keepdims=True)) @ values
        total /= len(self._stacked)
        return [dict(zip(self.dimensions, map(float, row))) for row in total]

    @functools.cached_property
    def _stacked(self) -> list[tuple[bool, _Stacked]]:
        import numpy as np

        out = []
        for counts, models in self._members:
            coef, intercept, blocks, start = [], [], [], 0
            for dimension in self.dimensions:
                model, values = models[dimension]
                coef.append(model.coef_)
                intercept.append(model.intercept_)
                blocks.append((start, start + len(model.intercept_), values))
                start += len(model.intercept_)
            out.append((counts, _Stacked(np.vstack(coef), np.concatenate(intercept), blocks)))
        return out


@dataclass(frozen=True)
class _Stacked:
    coef: Any
    intercept: Any
    blocks: list[tuple[int, int, Any]]


def write_params(params: Mapping[str, Any], path: Path) -> str:
    """Write ``params`` as JSON and its SHA-256 beside it (each whole, :func:`~pearl_verl.write_whole.write_whole`);
    returns the digest."""
    text = json.dumps(params, indent=None, separators=(",", ":"), sort_keys=False) + "\n"
    digest = sha256_of(text.encode())
    write_whole(path, text)
    write_whole(checksum_path(path), f"{digest}  {path.name}\n")
    return digest


def read_params(path: Path) -> dict[str, Any]:
    """The parameters of ``path`` after checking its format, version and checksum.

    Raises:
        InputError: a missing file or checksum, a mismatch, or a file of another format or version.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the fitted judge's parameters: {exc.strerror or exc}") from None
    sums = checksum_path(path)
    try:
        expected = sums.read_text(encoding="utf-8").split()[0]
    except (OSError, IndexError):
        raise InputError(f"{sums}: missing or empty; the fitted judge's parameters come with their SHA-256 "
                         "(pearl-verl judge-fit writes both).") from None
    actual = sha256_of(data)
    if actual != expected:
        raise InputError(f"{path}: SHA-256 {actual} does not match {expected} in {sums.name}; the file was changed "
                         "or cut short. Refit it with pearl-verl judge-fit.")
    params = json.loads(data)
    if params.get("format") != FORMAT or params.get("version") != VERSION:
        raise InputError(f"{path}: not fitted judge parameters of version {VERSION} "
                         f"(format {params.get('format')!r}, version {params.get('version')!r}).")
    return params


def model_from_params(params: Mapping[str, Any], path: Path) -> TurnModel:
    """Rebuild the scikit-learn objects of ``params`` (see the module docstring)."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizers = {}
    for name in FIELDS:
        spec = params["vectorizers"][name]
        vectorizer = TfidfVectorizer(ngram_range=tuple(spec["ngram_range"]), sublinear_tf=spec["sublinear_tf"],
                                     vocabulary={term: i for i, term in enumerate(spec["terms"])})
        vectorizer.idf_ = decode(spec["idf"])
        vectorizers[name] = vectorizer
    counts = params["counts"]
    if list(counts["names"]) != list(COUNTS):
        raise InputError(f"{path}: fitted on the counts {counts['names']}, this version computes {list(COUNTS)}; "
                         "refit with pearl-verl judge-fit.")
    members = []
    for member in params["members"]:
        models = {}
        for dimension, spec in member["dimensions"].items():
            model = LogisticRegression()
            model.classes_ = np.array(spec["classes"])
            model.coef_ = decode(spec["coef"])
            model.intercept_ = np.array(spec["intercept"], dtype=float)
            models[dimension] = (model, np.array(spec["values"], dtype=float))
        members.append((bool(member["counts"]), models))
    dimensions = tuple(params["members"][0]["dimensions"])
    if any(tuple(m["dimensions"]) != dimensions for m in params["members"]):
        raise InputError(f"{path}: its members score different dimensions; refit with pearl-verl judge-fit.")
    return TurnModel(
        dimensions=dimensions,
        meta={k: v for k, v in params.items() if k not in ("vectorizers", "counts", "members")},
        path=path,
        _vectorizers=vectorizers,
        _count_mean=np.array(counts["mean"], dtype=float),
        _count_scale=np.array(counts["scale"], dtype=float),
        _members=members,
    )


@functools.lru_cache(maxsize=4)
def load_model(path: Path = SHIPPED) -> TurnModel:
    """The fitted model of ``path`` (default: the shipped one), read once per process."""
    return model_from_params(read_params(path), path)
