"""The progress bar of long commands (judging, evaluation, data generation): tqdm on stderr."""

from __future__ import annotations

import sys
from typing import Any


def progress_bar(mode: str, total: int, unit: str, desc: str) -> Any:
    """A tqdm bar on stderr, or None (``auto`` shows it only on a terminal)."""
    if mode == "off" or (mode == "auto" and not sys.stderr.isatty()):
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, mininterval=0.5 if mode == "auto" else 0)
