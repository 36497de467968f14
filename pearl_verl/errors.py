"""The project's input-error type: what ``pearl-verl`` reports as the user's mistake.

Commands turn an :class:`InputError` into one line, ``error: FILE:LINE: field: what is wrong``,
and exit 2. Any other exception, a ``ValueError`` of numpy or pandas included, is a bug of ours or
of a library and keeps its traceback: reading it as a user mistake would send the user hunting in
their input for a fault that is not there.

It subclasses ``ValueError`` so that callers (and verl, which catches ``ValueError`` around config
validation) keep working unchanged.
"""

from __future__ import annotations

import os
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

