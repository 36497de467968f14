"""Keep pasted API keys out of everything ``pearl-verl`` prints: errors, argparse messages, logs, warnings.

Users paste a key where the NAME of the variable holding it belongs (``--judge-api-key-env sk-...``).
Refusing is not enough: a message that repeats the value puts the key into CI logs and issue
trackers. :func:`looks_secret` is the one rule that decides what looks like a key, and
:func:`redact` replaces every such token of a text with :data:`PLACEHOLDER`.

The rule, token by token (a token is a run of ``[A-Za-z0-9_+/=.-]``; anything else separates):

* a known key prefix (:data:`KEY_PREFIXES`: OpenAI, Anthropic, Hugging Face, GitHub, Slack, AWS,
  Google, GitLab, Replicate, Groq, ...) followed by at least 16 of ``[A-Za-z0-9_-]``, not all
  lower-case letters (so ``hf_transfer`` or ``sk-learn`` stay);
* ``Bearer <token of 8+ characters>`` (an ``Authorization`` header pasted whole);
* ``NAME=value`` whose value is secret-shaped (``OPENAI_API_KEY=sk-...``): only the value is replaced;
* a high-entropy token: a letters-and-digits stretch of at least :data:`MIN_RANDOM_LEN` characters
  that mixes at least two of lower case, upper case and digits, switches between them often
  (random text does at ~60% of positions, camelCase words at ~15%) and has a Shannon entropy of at
  least :data:`MIN_ENTROPY` bits per character.

Besides the shapes, every key the program itself took from an environment variable
(:func:`remember_secret`, called by the LLM client before its first request) is replaced wherever it
occurs, whatever it looks like, and so are its URL-encoded and JSON-escaped forms (:func:`echoed_forms`), also
split by line breaks: a server that echoes it back in an error body cannot bring it into a message.
:class:`RedactingStream` puts ``pearl-verl``'s stdout and stderr behind that replacement.

Deliberately not secret (they fill ordinary messages): file paths, URLs such as
``http://127.0.0.1:8000/v1``, model names such as ``Qwen/Qwen3-30B-A3B-Instruct-2507`` (their
stretches between ``/ - . _`` are short), environment variable names (``OPENAI_API_KEY``),
English and camelCase words (``InvalidUrlClientError``), Hydra overrides
(``actor_rollout_ref.rollout.n=8``), hex strings of any length (git SHAs, content hashes: a hex-only
key is caught only by a known prefix) and UUID-like run ids (hex groups joined by ``-``).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from typing import Any, TextIO
from urllib.parse import quote, quote_plus

PLACEHOLDER = "<redacted: looks like an API key>"

KEY_PREFIXES: tuple[str, ...] = (
    "sk-ant-",  # Anthropic
    "sk-proj-",  # OpenAI project keys
    "sk-",  # OpenAI, DeepSeek, and most OpenAI-compatible providers
    "hf_",  # Hugging Face
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",  # GitHub
    "glpat-",  # GitLab
    "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xapp-",  # Slack
    "AKIA", "ASIA",  # AWS access key ids
    "AIza",  # Google API keys
    "r8_",  # Replicate
    "gsk_",  # Groq
    "pplx-",  # Perplexity
    "nvapi-",  # NVIDIA
    "sk_live_", "rk_live_",  # Stripe
)
"""Prefixes of the key formats providers document; the rest of the key follows without a separator."""

MIN_PREFIXED_REST = 16
MIN_RANDOM_LEN = 20
MIN_ENTROPY = 3.0
MIN_SWITCH_RATE = 0.3

_TOKEN = re.compile(r"[A-Za-z0-9_+/=.\-]+")
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)([A-Za-z0-9_+/=.\-~]{8,})")
_ASSIGNMENT = re.compile(r"([A-Za-z_.\-][A-Za-z0-9_.\-]*=)(.+)")
_PREFIX_PART = re.compile(r"[A-Za-z0-9_\-]+")
_ALNUM_PART = re.compile(r"[A-Za-z0-9]+")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
MIN_CAMEL_WORD_LEN = 3.5

MIN_REMEMBERED_LEN = 8
"""Shorter values are not remembered: replacing every ``abc`` of a text would garble it, and no provider
issues keys that short. The LLM client refuses such a key with one line (``llm/client.py``) rather than send
a key it could not keep out of its messages."""

_REMEMBERED: set[str] = set()
_remembered_pattern: re.Pattern[str] | None = None

_LINE_BREAK = r"(?:[ \t]*(?:\r\n?|\n|\\r(?:\\n)?|\\n)[ \t>|#]*)?"
"""What a server's wrapping may put inside an echoed key: a line break, as written or JSON-escaped, with the spaces
before it and the indentation or quote marks (``>``, ``|``, ``#``) after it."""


def remember_secret(value: str) -> None:
    """From now on :func:`redact` replaces ``value`` wherever it occurs, whatever its shape.

    Called where a key is taken from a flag or an environment variable, so that a server which echoes
    it back (a 401 body repeating the ``Authorization`` header) cannot bring it into a message.
    """
    global _remembered_pattern
    forms = echoed_forms(value)
    if len(value) >= MIN_REMEMBERED_LEN and not forms <= _REMEMBERED:
        _REMEMBERED.update(forms)
        longest_first = sorted(_REMEMBERED, key=len, reverse=True)  # a longer form first: its whole echo goes
        _remembered_pattern = re.compile("|".join(_LINE_BREAK.join(map(re.escape, f)) for f in longest_first))


def echoed_forms(value: str) -> set[str]:
    """``value`` as a server may echo it: as given, URL-encoded (a query string, ``%2F`` for ``/``, ``+`` or
    ``%20`` for a space) and JSON-escaped (``\\/`` for ``/`` too, as some servers write it)."""
    escaped = json.dumps(value)[1:-1]
    return {value, quote(value), quote(value, safe=""), quote_plus(value, safe=""), escaped,
            escaped.replace("/", "\\/")}


def looks_secret(value: str) -> bool:
    """Whether ``value`` is, or holds, something shaped like an API key (the module docstring's rule)."""
    return redact(value) != value


def redact(text: str) -> str:
    """``text`` with every remembered key and secret-shaped token replaced by :data:`PLACEHOLDER` (``NAME=`` kept)."""
    text = redact_remembered(text)
    text = _BEARER.sub(lambda m: m[1] + m[2] + PLACEHOLDER, text)
    return _TOKEN.sub(lambda m: _redact_token(m[0]), text)


def redact_remembered(text: str) -> str:
    """``text`` with every remembered key (:func:`remember_secret`) replaced, and nothing else; also where a line
    break, written or JSON-escaped (``\\n``), splits it, as a server that wraps a long line in an error body does."""
    return text if _remembered_pattern is None else _remembered_pattern.sub(PLACEHOLDER, text)


def api_key_message(where: str) -> str:
    """The refusal of a key pasted where a variable's NAME belongs; it names the flag or field, never the value."""
    return f"{where} looks like an API key; pass the NAME of the environment variable that holds it"


def _redact_token(token: str) -> str:
    assignment = _ASSIGNMENT.fullmatch(token)
    if assignment and not _token_is_secret(assignment[1]):
        name, value = assignment[1], assignment[2]
        return name + _redact_token(value) if _token_is_secret(value) or "=" in value else token
    return PLACEHOLDER if _token_is_secret(token) else token


def _token_is_secret(token: str) -> bool:
    """A known prefix in any ``[A-Za-z0-9_-]`` part, or a high-entropy letters-and-digits stretch."""
    return any(_has_key_prefix(part) for part in _PREFIX_PART.findall(token)) or any(
        _is_random(part) for part in _ALNUM_PART.findall(token)
    )


def _has_key_prefix(part: str) -> bool:
    for prefix in KEY_PREFIXES:
        if part.startswith(prefix):
            rest = part[len(prefix):]
            return len(rest) >= MIN_PREFIXED_REST and not re.fullmatch(r"[a-z_\-]+", rest)
    return False


def _is_random(part: str) -> bool:
    """A long stretch that mixes character classes often and evenly: how generated keys look, not words."""
    if len(part) < MIN_RANDOM_LEN or _HEX.fullmatch(part) or _is_camel_case(part):
        return False
    classes = [_char_class(c) for c in part]
    if len(set(classes)) < 2:
        return False
    switches = sum(a != b for a, b in itertools.pairwise(classes))
    return switches / (len(part) - 1) >= MIN_SWITCH_RATE and _entropy(part) >= MIN_ENTROPY


def _is_camel_case(part: str) -> bool:
    """Words run together (``InvalidUrlClientError``, ``LexerNoViableAltException``): no digits, and words
    of 3.5 letters or more on average, where a random mix of cases changes every second letter or so."""
    words = _CAMEL_WORD.findall(part)
    return "".join(words) == part and len(part) / len(words) >= MIN_CAMEL_WORD_LEN


def _char_class(char: str) -> int:
    return 0 if char.islower() else 1 if char.isupper() else 2


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


class RedactingStream:
    """A text stream that replaces every remembered key (:func:`redact_remembered`) in what is written to it.

    ``pearl-verl`` puts its stdout and stderr behind one of these: that is where text leaves the
    program for a terminal or a CI log, whichever code printed it, so a key taken from the
    environment cannot leave through any line. Only remembered keys: the shape rule would also take
    what a command is meant to print (``compare add-annotator``'s login tokens); it applies to error
    lines, logs and warnings, where nothing random belongs. Each ``write`` is redacted whole
    (``print`` writes a message in one piece); everything else is the wrapped stream's.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact_remembered(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
