"""How many threads verl's FSDP engine computes on, as the launcher tells its workers (``PEARL_TRAIN_THREADS``).

Apart from :mod:`.engine` so that a launcher can read and set it without importing verl's engines, whose import warns
about every engine that is not installed.
"""

from __future__ import annotations

import os

TRAIN_THREADS_ENV = "PEARL_TRAIN_THREADS"


def train_threads() -> int | None:
    """The thread count ``PEARL_TRAIN_THREADS`` asks for; None when unset or empty."""
    value = os.environ.get(TRAIN_THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{TRAIN_THREADS_ENV}={value!r}: a whole number of threads, 1 or more")
    return int(value)
