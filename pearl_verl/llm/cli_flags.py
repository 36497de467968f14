"""The flags of one LLM endpoint, the same on every command that calls one.

A command adds an endpoint's flags under a prefix (``""`` for its only endpoint, ``judge-`` for
``--judge-base-url`` and its siblings) and builds the :class:`EndpointConfig` back from the parsed
arguments; :class:`EndpointConfig` validates the values, so a bad one is reported the same way
whichever command took it; a number flag is checked while parsing against the field's declared
range (``EndpointConfig.RANGES``), so its error names the flag. Help texts and defaults come from
:class:`EndpointConfig`, or from the command's own config class (:func:`defaults_of`) where that has
other defaults (the judge's 300 s).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from pearl_verl.errors import InputError
from pearl_verl.llm.chat_types import STRUCTURED_OUTPUT_HELP, STRUCTURED_OUTPUTS, EndpointConfig, check_api_key_env
from pearl_verl.redact import api_key_message, looks_secret

FIELDS: dict[str, str] = {
    "base-url": "base_url",
    "model": "model",
    "api-key-env": "api_key_env",
    "timeout": "timeout_s",
    "max-retries": "max_retries",
    "concurrency": "max_concurrency",
    "structured-output": "structured_output",
}
"""Each endpoint flag (without its prefix) and the :class:`EndpointConfig` field it sets."""

ENDPOINT_FLAGS: tuple[str, ...] = tuple(FIELDS)
CONNECTION_FLAGS: tuple[str, ...] = ("base-url", "model", "api-key-env", "timeout", "max-retries")
"""The flags of an endpoint whose requests in flight follow the command's own ``--concurrency``
and whose replies have no JSON Schema (a tutor, an annotator), so neither flag would mean anything."""


class ApiKeyEnvAction(argparse._StoreAction):
    """Store an ``--*api-key-env`` value; refuse a pasted key while parsing, naming the flag, never the value.

    Refusing here, before required arguments or the command's own checks, means no later message
    (``... names an environment variable that is not set``) can repeat the key.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            check_api_key_env(values, option_string or self.dest)
        except InputError as exc:
            parser.error(str(exc))
        super().__call__(parser, namespace, values, option_string)


class EndpointSpecAction(argparse._AppendAction):
    """Append a ``key=value,...`` endpoint spec (``--tutor``); refuse one that carries a key while parsing."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            check_spec_keys(values, option_string or self.dest)
        except InputError as exc:
            parser.error(str(exc))
        super().__call__(parser, namespace, values, option_string)


def check_spec_keys(text: str, where: str = "tutor spec") -> None:
    """Refuse a ``key=value,...`` spec that carries a key, in ``api_key_env`` or anywhere, naming the field only.

    Run before anything that repeats the spec in a message (``tutor spec '...' has unknown key``).

    Raises:
        InputError: ``{where} api_key_env looks like an API key; pass the NAME ...``.
    """
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = (s.strip() for s in part.partition("="))
        if sep and key == "api_key_env":
            check_api_key_env(value, f"{where} api_key_env")
        elif looks_secret(value if sep else part):
            field = f"{where} {key}" if sep and _SPEC_KEY.fullmatch(key) else where  # a pasted NAME=key: no NAME
            raise InputError(api_key_message(field) + " in api_key_env=NAME.")


_SPEC_KEY = re.compile(r"[a-z_]{1,20}")
_TUNABLE: tuple[str, ...] = ("timeout_s", "max_retries", "max_concurrency", "structured_output")
_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(EndpointConfig)}
_ARGUMENTS: dict[str, dict[str, Any]] = {
    "base-url": {"metavar": "URL"},
    "model": {"metavar": "NAME"},
    "api-key-env": {"metavar": "VAR", "action": ApiKeyEnvAction},
    "timeout": {"type": EndpointConfig.RANGES["timeout_s"].flag, "metavar": "SECONDS"},
    "max-retries": {"type": EndpointConfig.RANGES["max_retries"].flag, "metavar": "N"},
    "concurrency": {"type": EndpointConfig.RANGES["max_concurrency"].flag, "metavar": "N"},
    "structured-output": {"choices": STRUCTURED_OUTPUTS},
}


def add_endpoint_flags(
    parser: argparse._ActionsContainer,
    prefix: str = "",
    role: str = "LLM",
    flags: tuple[str, ...] = ENDPOINT_FLAGS,
    defaults: Mapping[str, Any] | None = None,
    helps: Mapping[str, str] | None = None,
) -> None:
    """Add ``--{prefix}base-url``, ``--{prefix}model`` ... (those of ``flags``) to ``parser``.

    Args:
        parser: a parser or an argument group.
        prefix: put before every flag name, e.g. ``judge-``.
        role: what the endpoint is, for the help texts (``judge``, ``student``).
        flags: which of :data:`ENDPOINT_FLAGS` the command takes; a flag left out is set by the
            command through :func:`endpoint_config`'s overrides (e.g. its ``--concurrency``).
        defaults: defaults by :class:`EndpointConfig` field name, where the command's differ.
        helps: help texts by flag, where the command's say more than the shared ones.
    """
    unknown = (set(flags) - set(FIELDS)) | (set(defaults or {}) - set(_TUNABLE))
    if unknown:
        raise ValueError(f"no endpoint flag or tunable field {sorted(unknown)}")
    values = {**_DEFAULTS, **(defaults or {})}
    shared = _shared_helps(role)
    for flag in flags:
        spec = dict(_ARGUMENTS[flag])
        if FIELDS[flag] in _TUNABLE:
            spec["default"] = values[FIELDS[flag]]
        spec["help"] = (helps or {}).get(flag, shared[flag])
        parser.add_argument(f"--{prefix}{flag}", **spec)


def endpoint_values(args: argparse.Namespace, prefix: str = "") -> dict[str, Any]:
    """The :class:`EndpointConfig` fields the endpoint's flags carry (``base_url`` None when not given).

    Only the flags the command added under ``prefix`` are read; ``JudgeConfig`` and
    ``StudentConfig`` take the same field names, so the result also fills those.
    """
    found = {}
    for flag, field in FIELDS.items():
        dest = (prefix + flag).replace("-", "_")
        if hasattr(args, dest):
            found[field] = getattr(args, dest)
    return found


def require_endpoint_flags(args: argparse.Namespace, prefix: str, role: str, instead: str) -> None:
    """A command whose ``role`` calls an LLM got both ``--{prefix}base-url`` and ``--{prefix}model``.

    Checked before the role's config is built, whose own error names the config keys
    (``+reward.reward_kwargs.base_url=...``), not the flags a person typed.

    Raises:
        InputError: naming the two flags, what they got, and ``instead`` (the offline test double's flag).
    """
    values = endpoint_values(args, prefix)
    if not (values.get("base_url") and values.get("model")):
        raise InputError(f"the {role} endpoint needs --{prefix}base-url and --{prefix}model (got "
                         f"{values.get('base_url')!r} and {values.get('model')!r}), or {instead}.")


def endpoint_config(args: argparse.Namespace, prefix: str = "", **overrides: Any) -> EndpointConfig | None:
    """The endpoint the flags under ``prefix`` describe, or None when no base URL was given (offline).

    Args:
        args: the parsed arguments.
        prefix: as given to :func:`add_endpoint_flags`.
        overrides: fields the command sets from its own flags (``max_concurrency=args.concurrency``).

    Raises:
        InputError: from :class:`EndpointConfig`, naming the field of a bad value the command set itself.
    """
    values = {**endpoint_values(args, prefix), **overrides}
    if not values.get("base_url"):
        return None
    return EndpointConfig(**values)


def defaults_of(config: Any) -> dict[str, Any]:
    """The tunable endpoint fields of a config that carries them (``JudgeConfig``, ``StudentConfig``)."""
    return {name: getattr(config, name) for name in _TUNABLE if hasattr(config, name)}


def _shared_helps(role: str) -> dict[str, str]:
    return {
        "base-url": f"{role} endpoint, e.g. http://host:8000/v1",
        "model": f"{role} model name as served",
        "api-key-env": f"NAME of the environment variable with the {role} endpoint's API key",
        "timeout": "seconds per HTTP attempt",
        "max-retries": "HTTP retries after a timeout, connection error, 429 or 5xx",
        "concurrency": "requests in flight at once",
        "structured-output": STRUCTURED_OUTPUT_HELP,
    }
