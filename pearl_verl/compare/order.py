"""What an annotator sees where: the A/B order of a pair and the order pairs come in.

Both are pure functions of the study's secret salt (stored in the database), the pair's public id
and the annotator's slot (0 for the first annotator added, 1 for the second, ...), so a restarted
server shows everyone exactly what it showed before.

The A/B order is random per pair and counterbalanced across annotators: annotators in even slots
see a pair in one order, those in odd slots in the other. The paper's design has two teachers per
pair; with this, each pair is seen once in each order, so a preference for whichever dialogue comes
first cancels out of the table instead of only averaging out over many pairs. Which order comes
first is drawn per pair, so neither real tutor is on the left more often for any annotator.

Votes are stored in terms of the pair's real sides (``a`` = ``tutor_a``, ``b`` = ``tutor_b``);
the displayed letters are mapped back here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from pearl_verl.errors import InputError

SIDES: tuple[str, ...] = ("a", "b")
OUTCOMES: tuple[str, ...] = ("a", "tie", "b")
"""A vote in real terms: tutor_a preferred, tie, tutor_b preferred."""
SHOWN: tuple[str, ...] = ("A", "tie", "B")
"""A vote as the page shows it: the left dialogue (A), tie, the right dialogue (B)."""


def _draw(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


def left_side(salt: str, pair_public_id: str, slot: int) -> str:
    """The real side (``a`` or ``b``) shown on the left, as "Dialogue A", to the annotator in ``slot``."""
    base = _draw("left", salt, pair_public_id) % 2
    return SIDES[(base + slot) % 2]


def queue_key(salt: str, pair_public_id: str, slot: int) -> int:
    """Sort key of a pair in an annotator's queue (a per-annotator shuffle)."""
    return _draw("queue", salt, slot, pair_public_id)


def to_real(shown: str, left: str) -> str:
    """A displayed choice (``A``, ``B``, ``tie``) as a real outcome (``a``, ``b``, ``tie``).

    Raises:
        InputError: for a choice outside :data:`SHOWN` or a side outside :data:`SIDES`.
    """
    if shown not in SHOWN:
        raise InputError(f"choice {shown!r} must be one of {list(SHOWN)}.")
    if left not in SIDES:
        raise InputError(f"left side {left!r} must be one of {list(SIDES)}.")
    if shown == "tie":
        return "tie"
    right = "b" if left == "a" else "a"
    return left if shown == "A" else right


def dims_to_real(shown: Mapping[str, str], left: str) -> dict[str, str]:
    """Per-dimension displayed choices as real outcomes; unanswered dimensions are left out."""
    return {dim: to_real(choice, left) for dim, choice in shown.items() if choice}
