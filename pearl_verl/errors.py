"""The project's input-error type: what ``pearl-verl`` reports as the user's mistake.

Commands turn an :class:`InputError` into one line, ``error: FILE:LINE: field: what is wrong``,
and exit 2. Any other exception, a ``ValueError`` of numpy or pandas included, is a bug of ours or
of a library and keeps its traceback: reading it as a user mistake would send the user hunting in
their input for a fault that is not there.

It subclasses ``ValueError`` so that callers (and verl, which catches ``ValueError`` around config
validation) keep working unchanged.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any


class InputError(ValueError):
    """A user's input (a flag, a config value, a file, a line, a field) is wrong; the message says where."""


def located(path: str | os.PathLike, line: int | None, message: str, field: str | None = None) -> InputError:
    """``FILE:LINE: field: message`` (line and field left out when unknown) as an :class:`InputError`."""
    where = f"{os.fspath(path)}:{line}" if line is not None else os.fspath(path)
    return InputError(f"{where}: {field}: {message}" if field else f"{where}: {message}")


def check_choices(config: Any, prefix: str = "", none_ok: bool = False) -> None:
    """Each setting named in ``config.CHOICES`` holds one of its allowed values (None too when ``none_ok``).

    Raises:
        InputError: ``{prefix}{name}={value!r} must be one of [...]`` for the first that does not.
    """
    for name, allowed in config.CHOICES.items():
        value = getattr(config, name)
        if not (none_ok and value is None) and value not in allowed:
            raise InputError(f"{prefix}{name}={value!r} must be one of {list(allowed)}.")


@dataclass(frozen=True)
class Range:
    """The allowed values of a number setting, declared once beside the setting (a class's ``RANGES``).

    Attributes:
        low: smallest allowed value (excluded when ``low_open``).
        high: largest allowed value (included).
        low_open: whether ``low`` itself is excluded (``> 0`` rather than ``>= 0``).
        why: what the bound protects, said after the range in the error.
    """

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    why: str = ""

    def admits(self, value: Any) -> bool:
        """A finite int or float (never a bool) within the range."""
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return False
        return (self.low < value if self.low_open else self.low <= value) and value <= self.high

    def __str__(self) -> str:
        low = "" if self.low == -math.inf else f"{'>' if self.low_open else '>='} {self.low:g}"
        high = "" if self.high == math.inf else f"<= {self.high:g}"
        if low and high:
            return f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"
        return low or high or "a finite number"


def check_ranges(config: Any, prefix: str = "") -> None:
    """Each setting named in ``config.RANGES`` is a finite number in its range (or None, the field's "unset").

    Raises:
        InputError: ``{prefix}{name}={value!r} must be {range}`` for the first that is not.
    """
    for name, allowed in config.RANGES.items():
        value = getattr(config, name)
        if value is not None and not allowed.admits(value):
            why = f": {allowed.why}" if allowed.why else ""
            raise InputError(f"{prefix}{name}={value!r} must be a number {allowed}{why}.")
