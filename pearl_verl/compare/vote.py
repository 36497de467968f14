"""One teacher's vote on one pair, in real terms (never the displayed letters alone)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Vote:
    """One recorded vote, in real terms.

    Attributes:
        pair_id: the pair's ``pair_id`` (from build-pairs, not the public id).
        tutor_a: the pair's focal tutor.
        tutor_b: the compared tutor.
        margin: the pair's margin bucket, or None.
        annotator: the annotator's name.
        outcome: ``a``, ``tie`` or ``b``.
        left_side: the real side the annotator saw as "Dialogue A".
        dims: per-dimension outcomes the annotator chose (absent dimensions were left open).
        comment: free text.
    """

    pair_id: str
    tutor_a: str
    tutor_b: str
    margin: str | None
    annotator: str
    outcome: str
    left_side: str
    dims: Mapping[str, str]
    comment: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "dims": dict(self.dims)}
