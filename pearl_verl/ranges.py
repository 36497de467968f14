"""Each number setting's allowed values, declared once beside the setting and checked where it is read.

A config class lists its number fields' ranges in ``RANGES`` (checked by :func:`check_ranges` in
its ``__post_init__`` and shown in ``--help`` by :mod:`pearl_verl.config_flags`); the capacity plan
checks a recipe's overrides (text), a model's ``config.json`` (JSON values) and its flags with
:meth:`Range.check`. A bad value anywhere is one line, ``KEY=VALUE: what is allowed``, never a
``ZeroDivisionError``, a NaN that passes every ``<`` test, or a plan of negative dialogues further on.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from typing import Any

from pearl_verl.errors import InputError

LIMIT = 10**9
"""The largest value any size, count or rate may take: far above every real setting, and low enough
that the plan's products (tokens x layers x hidden size) stay finite floats."""
NULLS = ("null", "None")
"""How an override spells null (Hydra's ``null``; ``None`` as Python prints it)."""
SHOWN_CHARS = 60


def shown(value: Any, limit: int | None = SHOWN_CHARS) -> str:
    """``value`` as an error line shows it: override text as written, numbers as Python writes them,
    other JSON values as JSON; one line of at most ``limit`` characters (control characters escaped).
    ``limit`` None shows it whole: a path cut short names no file."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, float):
        text = repr(value)  # nan, inf: as typed
    else:
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            text = repr(value)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in (text if limit is None else text[: limit * 2]))
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


def bad_value(key: str, value: Any, allowed: str) -> InputError:
    """The error for ``key=value`` outside what is allowed: ``KEY=VALUE: allowed``."""
    return InputError(f"{key}={shown(value)}: {allowed}")


@dataclass(frozen=True)
class Range:
    """The values one numeric setting may take.

    Attributes:
        kind: ``int`` (a whole number) or ``float`` (any finite number).
        low: the smallest allowed value.
        low_open: ``low`` itself is not allowed (``(0, 1]`` for a memory fraction).
        high: the largest allowed value.
        high_open: ``high`` itself is not allowed (``[0, 1)`` for a share that must leave some rows).
        null_ok: null (None) is allowed and means "not set".
        why: what the bound protects, said after the range in the error.
    """

    kind: type = int
    low: float = 1
    low_open: bool = False
    high: float = LIMIT
    high_open: bool = False
    null_ok: bool = False
    why: str = ""

    def describe(self) -> str:
        """What is allowed, in words: ``a whole number from 1 to 1,000,000,000``."""
        what = "a whole number" if self.kind is int else "a finite number"
        low = f"{self.low:g}" if self.kind is float else f"{int(self.low):,}"
        high = f"{self.high:,g}" if self.kind is float and self.high < 1e6 else f"{int(self.high):,}"
        if self.low_open or self.high_open:
            bounds = (f"greater than {low}" if self.low_open else f"at least {low}") + " and " + \
                (f"less than {high}" if self.high_open else f"at most {high}")
        else:
            bounds = f"from {low} to {high}"
        return f"{what} {bounds}" + (", or null" if self.null_ok else "") + (f" ({self.why})" if self.why else "")

    def in_help(self, text: str) -> str:
        """A flag's help ``text`` ending with what is allowed: ``text. Allowed: a whole number from 1 to ...``."""
        return f"{text.rstrip('.')}. Allowed: {self.describe()}."

    def check(self, key: str, value: Any) -> int | float | None:
        """``value`` (an override's text, a JSON value or a flag's value) as a number in this range.

        Raises:
            InputError: ``KEY=VALUE: what is allowed`` for null where a number is required, text that
                is no number, a fraction where a whole number goes, nan, inf, or a value out of range.
        """
        if value is None or (isinstance(value, str) and value.strip() in NULLS):
            if self.null_ok:
                return None
            raise bad_value(key, value, self.describe())
        number = self._number(value)
        if number is None:
            raise bad_value(key, value, self.describe())
        if self.kind is float and not math.isfinite(number):
            raise bad_value(key, value, self.describe())
        above_low = number > self.low if self.low_open else number >= self.low
        below_high = number < self.high if self.high_open else number <= self.high
        if not (above_low and below_high):
            raise bad_value(key, value, self.describe())
        return number

    def flag(self, text: str) -> int | float | None:
        """An argparse ``type=``: the flag's text as a number in this range (argparse names the flag).

        Raises:
            argparse.ArgumentTypeError: ``got VALUE; allowed: what is allowed``.
        """
        try:
            return self.check("", text)
        except InputError:
            raise argparse.ArgumentTypeError(f"got {shown(text)}; allowed: {self.describe()}") from None

    def check_json(self, key: str, value: Any) -> int | float | None:
        """As :meth:`check` for a value parsed from JSON, where text is never a number (``"4096"``)."""
        if isinstance(value, str):
            raise bad_value(key, json.dumps(value), self.describe())
        return self.check(key, value)

    def _number(self, value: Any) -> int | float | None:
        """``value`` as ``kind``, or None when it is not one (a bool, a list, text that is no number)."""
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            try:
                return self.kind(value.strip())  # int() refuses "1.5", "nan" and over 4,300 digits
            except (ValueError, OverflowError):
                return None
        if isinstance(value, int):
            return self.kind(value) if self.kind is int or abs(value) <= LIMIT else None
        if isinstance(value, float):
            if self.kind is float:
                return value
            return int(value) if math.isfinite(value) and value.is_integer() else None
        return None


POSITIVE = Range(int)
"""A size, count, length, number of GPUs, nodes, layers or heads: 1 or more."""
POSITIVE_OR_NULL = Range(int, null_ok=True)
COUNT = Range(int, low=0)
"""A count that may be 0 (experts of a dense model, tokens of an empty prompt part)."""
COUNT_OR_NULL = Range(int, low=0, null_ok=True)
FRACTION = Range(float, low=0, low_open=True, high=1)
"""A share of a GPU's memory (``gpu_memory_utilization``): more than 0, at most 1."""
POSITIVE_NUMBER = Range(float, low=0, low_open=True)
"""A rate (tokens per second), a memory size in GB or an average: finite and more than 0."""
NON_NEGATIVE_NUMBER = Range(float, low=0)
SHARE = Range(float, low=0, high=1)
"""A share of the rows or problems (a validation fraction, a misconception rate): 0 to 1."""
VAL_FRACTION = Range(float, low=0, high=1, high_open=True, why="0: no validation split")
"""The share of rows or problems held out for validation: some must be left to train on."""
SEED = Range(int, low=0, high=2**32 - 1)
"""A random seed (numpy's range)."""
PORT = Range(int, low=0, high=65535, why="0: any free port")
"""A TCP port."""


def check_ranges(config: Any, prefix: str = "") -> None:
    """Each setting named in ``config.RANGES`` holds a value of its range (:meth:`Range.check_json`:
    a config's fields hold typed values, so text such as ``"8"`` is a mistake, not a number).

    Raises:
        InputError: ``{prefix}{name}=VALUE: what is allowed`` for the first that does not.
    """
    for name, allowed in config.RANGES.items():
        allowed.check_json(f"{prefix}{name}", getattr(config, name))
