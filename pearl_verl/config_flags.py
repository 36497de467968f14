"""Command-line flags generated from config dataclasses: a new setting is one field with one docstring entry.

Each flag's type, default, ``X | None`` handling and choices come from transformers'
``HfArgumentParser`` (the parser of transformers' and TRL's example scripts, installed with
transformers), field by field, so a command can take some fields of a config under a prefix
(``--judge-samples``) beside flags of its own. A boolean is an ``--x/--no-x`` switch (argparse's
``BooleanOptionalAction``), as ``HfArgumentParser``'s ``--x [VALUE]`` would take a following
positional argument for its value. Each flag's help is the field's entry in the ``Attributes:``
section of its class's docstring (or a base class's), read with ``docstring_parser``: fields are
documented in docstrings (style guide), so help and docs are one text. Flags have the dashed
spelling only (``--out-dir``; ``HfArgumentParser`` would add ``--out_dir`` too).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import typing
from collections.abc import Collection, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import docstring_parser
from transformers import HfArgumentParser

from pearl_verl.ranges import Range


def field_docs(cls: type) -> dict[str, str]:
    """``{field: one-line help}`` from the ``Attributes:`` sections of ``cls`` and its bases (nearest wins)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        for param in docstring_parser.parse(klass.__doc__ or "").params:
            if param.args and param.args[0] == "attribute" and param.description:
                docs[param.arg_name] = " ".join(param.description.replace("``", "").split())
    return docs


def add_config_flags(
    parser: argparse._ActionsContainer,
    cls: type,
    names: Iterable[str] | None = None,
    *,
    prefix: str = "",
    defaults: Mapping[str, Any] | None = None,
    choices: Mapping[str, Collection[str]] | None = None,
    helps: Mapping[str, str] | None = None,
    zero_is_null: Collection[str] = (),
) -> tuple[str, ...]:
    """Add a flag for each of ``names`` (every field when None), ``--{prefix}{name with dashes}``.

    Args:
        parser: a parser or an argument group.
        cls: the config dataclass.
        names: the fields to expose, in this order.
        prefix: put before each flag, e.g. ``judge-`` (the parsed value's name gets it too: ``judge_samples``).
        defaults: the command's defaults where they differ from the field's.
        choices: the allowed values of string fields, shown in ``--help`` and checked by argparse;
            by default the class's own ``CHOICES`` (the table its ``__post_init__`` checks against).
        helps: help texts where the command says more than the docstring.
        zero_is_null: fields whose flag takes 0 for null (``--judge-top-k 0``: the server's default).

    Returns:
        The field names added, for :func:`config_values`.

    Raises:
        ValueError: for a name that is not a field of ``cls``, or an undocumented field.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    chosen = tuple(fields) if names is None else tuple(names)
    unknown = sorted(set(chosen) - set(fields)) + sorted(set(defaults or {}) - set(chosen))
    if unknown:
        raise ValueError(f"{cls.__name__} has no field {unknown} (or it is not among the flags asked for)")
    docs, hints = field_docs(cls), typing.get_type_hints(cls)
    choices = {**getattr(cls, "CHOICES", {}), **(choices or {})}
    for name in chosen:
        help_text = (helps or {}).get(name) or docs.get(name)
        if not help_text:
            raise ValueError(f"{cls.__name__}.{name} has no entry in the docstring's Attributes section")
        flag = copy.copy(fields[name])  # HfArgumentParser rewrites the field it is given
        flag.name = prefix.replace("-", "_") + name
        flag.type = hints[name]
        if defaults and name in defaults:
            flag.default, flag.default_factory = defaults[name], dataclasses.MISSING
        allowed = getattr(cls, "RANGES", {}).get(name)
        if allowed is not None:
            help_text = (_zero_as_null(allowed) if name in zero_is_null else allowed).in_help(help_text)
        metadata: dict[str, Any] = {"help": _help(help_text, flag.default)}
        if name in choices:
            metadata["choices"] = tuple(choices[name])
        if flag.type is bool:  # a switch that takes no value, so it cannot swallow a positional argument
            parser.add_argument(f"--{flag.name.replace('_', '-')}", action=argparse.BooleanOptionalAction,
                                default=flag.default, **metadata)
            continue
        flag.metadata = MappingProxyType(metadata)
        dashed = _Dashed(parser)
        HfArgumentParser._parse_dataclass_field(dashed, flag)
        if allowed is not None:  # checked while parsing, so the error names the flag
            dashed.added.type = _NullAsZero(allowed) if name in zero_is_null else allowed.flag
    return chosen


def config_values(args: argparse.Namespace, names: Iterable[str], prefix: str = "") -> dict[str, Any]:
    """The parsed values of the fields :func:`add_config_flags` added, by field name."""
    stem = prefix.replace("-", "_")
    return {name: getattr(args, stem + name) for name in names}


class _Dashed:
    """Passes ``add_argument`` on with the dashed option strings only: one spelling of each flag."""

    def __init__(self, parser: argparse._ActionsContainer) -> None:
        self._parser = parser
        self.added: argparse.Action | None = None

    def add_argument(self, *names: str, **kwargs: Any) -> argparse.Action:
        dashed = [name for name in names if "_" not in name] or list(names)
        self.added = self._parser.add_argument(*dashed, **kwargs)
        return self.added


class _NullAsZero:
    """A range's flag type where ``0`` means null, as ``--top-k 0`` leaves the server's default."""

    def __init__(self, allowed: Range) -> None:
        self.allowed = allowed

    def __call__(self, text: str) -> int | float | None:
        return 0 if text.strip() == "0" else self.allowed.flag(text)


def _zero_as_null(allowed: Range) -> Range:
    """``allowed`` as help describes a flag that takes 0 for null: ``..., or null (0 or null: the server's default)``."""
    return dataclasses.replace(allowed, why=f"0 or {allowed.why}" if allowed.why else "0 is null")


def _help(text: str, default: Any) -> str:
    """``text`` for argparse (``%`` escaped), with the default where it says something."""
    text = text.replace("%", "%%")
    if default is dataclasses.MISSING or default is None or isinstance(default, bool) or "%(default)" in text:
        return text
    return f"{text} (default: %(default)s)"
