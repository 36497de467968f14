"""``build_dataclass``: a (nested) frozen dataclass from a mapping of settings, an unknown key refused by name.

Every config section reads its keys through it (``pearl:``, ``reward.reward_kwargs``), so a typo fails at startup with
the closest valid key, the same way in each.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any, TypeVar

from pearl_verl.errors import InputError

T = TypeVar("T")


def build_dataclass(cls: type[T], values: Mapping[str, Any], path: str) -> T:
    """Instantiate a (nested) frozen dataclass from a mapping, rejecting unknown keys."""
    if not isinstance(values, Mapping):
        raise InputError(f"{path} must be a mapping of settings, got {type(values).__name__}: {values!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [key for key in values if key not in fields]
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(str(key), fields, n=1)
        hint = f" Did you mean {path}.{close[0]}?" if close else ""
        raise InputError(f"Unknown setting {path}.{key}.{hint} Valid keys: {sorted(fields)}.")
    kwargs = {}
    for name, value in values.items():
        default = fields[name].default_factory if fields[name].default_factory is not dataclasses.MISSING else None
        if default is not None and dataclasses.is_dataclass(default):
            kwargs[name] = build_dataclass(default, value or {}, f"{path}.{name}")
        else:
            kwargs[name] = tuple(value) if isinstance(value, list | tuple) else value
    return cls(**kwargs)
