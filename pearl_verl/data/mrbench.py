"""Human labels on tutor responses: MRBench and the BEA 2025 shared-task files, read strictly.

A judge is only worth trusting if it agrees with teachers. MRBench (Maurya et al., NAACL 2025, "Unifying
AI Tutor Evaluation", shipped as ``data/mrbench/MRBench_V2.json``) is the public set of such labels: 200
conversations from MathDial and Bridge, each ending on a student's mistake or confusion, with 7 to 9
candidate next tutor responses (LLMs, an expert teacher and, for Bridge, a novice), every response
labelled by trained annotators on the eight dimensions of :data:`HUMAN_DIMENSIONS`. This module reads
such a file into :class:`HumanConversation` records; comparing a judge with them is left to its callers.

Two formats are read, row by row:

* MRBench: a JSON list of ``{conversation_id, conversation_history, Data, Split, Topic,
  Ground_Truth_Solution, anno_llm_responses: {tutor: {response, annotation: {dimension: label}}}}``.
* The BEA 2025 shared task on pedagogical ability assessment (built by the same authors on MRBench):
  a JSON list of ``{conversation_id, conversation_history, tutor_responses: {tutor: {response[,
  annotation]}}}`` with no Data, Split, Topic or solution. What is relied on here was read in the
  task's files as redistributed by participants (``mrbench_v3_devset.json``: 300 conversations,
  2,476 responses, each annotation holding only Mistake_Identification, Mistake_Location,
  Providing_Guidance and Actionability; ``mrbench_v3_testset.json``: 191 conversations, tutors
  anonymised as ``Tutor_1`` ... ``Tutor_9``, no ``annotation`` at all). Their histories separate
  turns with ``" \\n "`` where MRBench uses ``"\\xa0\\n\\xa0"``; :func:`parse_history` takes both.

A dimension absent from an annotation (or an annotation absent altogether, or a JSON null) is
simply not in :attr:`HumanResponse.labels`: no label is ever invented. What is present must be
exact: a known dimension with a label outside its set is an error naming the allowed labels, and a
dimension name outside :data:`HUMAN_DIMENSIONS` is an error too rather than skipped, because both
known formats use exactly these eight spellings, so an unknown name is far likelier a misspelling
(``Mistake_identification``, ``Humanlikeness``) whose labels would otherwise vanish without a word
than a dimension this reader could use.

Every error is an :class:`~pearl_verl.errors.InputError` reading ``FILE: row N (list index N-1,
conversation_id 'X'): field 'F': what is wrong; expected ...``, the style of
:mod:`pearl_verl.data.sources`; a file that is not JSON names its line and column instead.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pearl_verl.data.location import data_dir
from pearl_verl.dialogue.episode import STUDENT, TUTOR
from pearl_verl.errors import InputError, located
from pearl_verl.jsonl import input_file

_SCALE = ("No", "To some extent", "Yes")

HUMAN_DIMENSIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "Mistake_Identification": _SCALE,
        "Mistake_Location": _SCALE,
        "Revealing_of_the_Answer": ("Yes (but the answer is incorrect)", "Yes (and the answer is correct)", "No"),
        "Providing_Guidance": _SCALE,
        "Actionability": _SCALE,
        "Coherence": _SCALE,
        "Tutor_Tone": ("Offensive", "Neutral", "Encouraging"),
        "humanlikeness": _SCALE,
    }
)
"""The eight human dimensions, in the paper's order, each with its labels ordered worst to best.

Names and labels are spelled exactly as in the files (``humanlikeness`` is lower-case there). A
label's position is its ordinal class (:func:`label_class`, 0, 1, 2): higher is pedagogically
better, so two responses to one conversation can be compared on any dimension. For the six
Yes / To some extent / No dimensions "Yes" is best. For Revealing_of_the_Answer "No" (the answer was
not given away) is best and revealing a wrong answer is worst: it both tells and misleads; a caller
that only asks "was the answer revealed?" should compare "No" with either "Yes" rather than rely on
the order of the two. For Tutor_Tone Encouraging > Neutral > Offensive.
"""

RESPONSE_KEYS = ("anno_llm_responses", "tutor_responses")
"""Where a row keeps its candidate responses: MRBench's key, then the BEA 2025 files' key."""

NOT_AVAILABLE = "Not Available"
"""MRBench's marker for a missing Topic (every MathDial row) or Ground_Truth_Solution (every Bridge row)."""

MRBENCH_FILE = Path("mrbench") / "MRBench_V2.json"
"""The shipped MRBench file, relative to the data folder."""

# A new turn starts on a line that opens with a role; MRBench once writes "Student :" with a space.
_ROLE_LINE = re.compile(r"(Tutor|Student)\s*:\s*(.*)", re.DOTALL)
_ROLES = {"Tutor": TUTOR, "Student": STUDENT}

_Fail = Callable[[str, str], InputError]
"""Builds the located error of one row from (field, what is wrong)."""


def label_class(dimension: str, label: str) -> int:
    """The ordinal class of ``label`` on ``dimension``: 0 (worst) to 2 (best), see :data:`HUMAN_DIMENSIONS`.

    Raises:
        KeyError: ``dimension`` is not one of the eight.
        ValueError: ``label`` is not one of its labels.
    """
    return HUMAN_DIMENSIONS[dimension].index(label)


@dataclass(frozen=True)
class HumanResponse:
    """One candidate next tutor turn with the human labels it carries.

    Attributes:
        conversation_id: the id of the conversation it answers (not unique in MRBench: see :class:`HumanConversation`).
        tutor: the key it sits under: ``Expert``, ``Novice``, ``GPT4``, ``Gemini``, ... in MRBench, ``Tutor_1``
            ... in the anonymised BEA 2025 test set.
        text: the response exactly as in the file (195 MRBench responses carry leading or trailing spaces).
        labels: dimension -> label for the dimensions the file labels, in :data:`HUMAN_DIMENSIONS`' order;
            empty for an unannotated response.
    """

    conversation_id: str
    tutor: str
    text: str
    labels: dict[str, str]

    @property
    def classes(self) -> dict[str, int]:
        """dimension -> ordinal class (0 worst to 2 best, :func:`label_class`) of each labelled dimension."""
        return {dimension: label_class(dimension, label) for dimension, label in self.labels.items()}


@dataclass(frozen=True)
class HumanConversation:
    """One conversation (a row of the file) and its labelled candidate next tutor turns.

    Attributes:
        index: the row's 0-based position in the file's list. MRBench repeats five conversation_ids
            (same history, different responses or labels, some in different splits), so ``index``,
            not ``conversation_id``, tells rows apart.
        conversation_id: the row's id (a number is read as its decimal string).
        history: the dialogue so far, the raw string.
        turns: ``history`` as ``(role, text)`` pairs, role ``"tutor"`` or ``"student"`` (:func:`parse_history`),
            roles as the file writes them: a few MathDial rows of MRBench write a student's explanation as a
            ``Tutor:`` turn, and six histories end on a ``Tutor:`` turn (five of them such an explanation).
        source: ``MathDial`` or ``Bridge`` (MRBench's ``Data``); None when the file has none (BEA 2025).
        split: ``train``, ``val`` or ``test`` (MRBench's ``Split``); None when the file has none.
        topic: the Bridge lesson topic; None when absent or "Not Available" (every MathDial row).
        ground_truth_solution: the worked solution; None when absent or "Not Available" (every Bridge row).
        responses: the candidate responses, in the file's order.
    """

    index: int
    conversation_id: str
    history: str
    turns: tuple[tuple[str, str], ...]
    source: str | None
    split: str | None
    topic: str | None
    ground_truth_solution: str | None
    responses: tuple[HumanResponse, ...]


def mrbench_file(explicit: str | Path | None = None) -> Path:
    """The shipped MRBench file: ``<data folder>/mrbench/MRBench_V2.json``.

    Args:
        explicit: a ``--data-dir`` given on the command line; None or "" for the default data folder.

    Returns:
        The path (not checked to exist: :func:`read_human_labels` names it when it does not).

    Raises:
        InputError: no data folder can be found (see :func:`pearl_verl.data.location.data_dir`).
    """
    return data_dir(explicit) / MRBENCH_FILE


def parse_history(history: str) -> tuple[tuple[str, str], ...]:
    """A conversation history string as ``(role, text)`` turns, role ``"tutor"`` or ``"student"``.

    A turn starts on a line opening with ``Tutor:`` or ``Student:`` (spaces and no-break spaces
    around it ignored, so MRBench's ``"\\xa0\\n\\xa0"`` and BEA 2025's ``" \\n "`` separators both
    work); any other line continues the turn before it, because a student's written solution runs
    over several lines and ends on a bare final-answer line. Roles are not forced to alternate: a
    Bridge tutor often sends two or three messages in a row. A line with a misspelt role (the BEA
    2025 dev set has one ``Turor:``) is therefore read as part of the previous turn.

    Args:
        history: the raw ``conversation_history``.

    Returns:
        The turns in order, each text stripped of surrounding whitespace.

    Raises:
        ValueError: the first non-blank line opens with no role (the reader reports it located).
    """
    turns: list[tuple[str, list[str]]] = []
    for line in history.split("\n"):
        text = line.strip()  # str.strip() also removes the no-break spaces MRBench puts around turns
        match = _ROLE_LINE.match(text)
        if match:
            turns.append((_ROLES[match.group(1)], [match.group(2)]))
        elif turns:
            turns[-1][1].append(text)
        elif text:
            raise ValueError(f"starts with {text[:40]!r}; expected the first turn to open with 'Tutor:' or 'Student:'")
    if not turns:
        raise ValueError("holds no turn; expected lines opening with 'Tutor:' or 'Student:'")
    return tuple((role, "\n".join(lines).strip()) for role, lines in turns)


def read_human_labels(path: str | Path, splits: Iterable[str] | None = None) -> list[HumanConversation]:
    """Every conversation of an MRBench or BEA 2025 file, with its responses' human labels.

    Args:
        path: a ``.json`` file holding a list of conversations in either format (they may even be mixed).
        splits: keep only conversations of these ``Split`` values (MRBench: ``test``; ``train`` and
            ``val`` for tuning thresholds); None keeps every row.

    Returns:
        The conversations in file order (see :func:`select_splits` for ``splits``).

    Raises:
        InputError: the path is no readable file; the file is empty, not UTF-8, not JSON (line and
            column named), not a non-empty list; a row is malformed (row, conversation_id and field
            named, with what was expected); or ``splits`` cannot be applied (:func:`select_splits`).
    """
    path = input_file(path, "human-label file")
    conversations = [_conversation(row, index, path) for index, row in enumerate(_rows(path))]
    return conversations if splits is None else select_splits(conversations, splits, path)


def select_splits(
    conversations: Iterable[HumanConversation], names: Iterable[str], path: str | Path = "<conversations>"
) -> list[HumanConversation]:
    """The conversations whose split is one of ``names``, in their order.

    A split filter on rows that carry no split (BEA 2025 files) would silently keep nothing, and a
    mistyped split name likewise, so both are errors rather than an empty result.

    Args:
        conversations: as read by :func:`read_human_labels`.
        names: split names, e.g. ``["test"]`` or ``["train", "val"]``; one string is one name.
        path: the file they came from, for the error message.

    Returns:
        The selected conversations.

    Raises:
        InputError: no name is given; a conversation has no split; or a name matches no conversation
            (the splits present are listed).
    """
    # A bare "test" would otherwise be iterated as the splits "t", "e", "s".
    conversations, wanted = list(conversations), list(dict.fromkeys([names] if isinstance(names, str) else names))
    if not wanted:
        raise located(path, None, "no split was named to keep; name one (test, train, val) or filter nothing", "Split")
    for conversation in conversations:
        if conversation.split is None:
            raise _row_error(
                path,
                conversation.index,
                conversation.conversation_id,
                "Split",
                f"is absent, so the file cannot be filtered by split {wanted}; read it whole (no split filter)",
            )
    present = sorted({conversation.split for conversation in conversations if conversation.split is not None})
    missing = [name for name in wanted if name not in present]
    if missing:
        raise located(path, None, f"no conversation has split {missing}; the file's splits are {present}", "Split")
    return [conversation for conversation in conversations if conversation.split in wanted]


def _rows(path: Path) -> list[Any]:
    blob = path.read_bytes()
    if not blob.strip():
        raise located(path, None, "is empty; expected a JSON list of conversations")
    # A byte-order mark from a Windows editor is harmless; json would reject it.
    offset = len(codecs.BOM_UTF8) if blob.startswith(codecs.BOM_UTF8) else 0
    try:
        text = blob[offset:].decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = offset + exc.start
        line = blob.count(b"\n", 0, bad) + 1
        raise located(
            path, line, f"is not UTF-8 text (byte {bad + 1}, {blob[bad : bad + 1]!r}); save it as UTF-8"
        ) from None
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise located(path, exc.lineno, f"is not valid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:  # thousands of nested brackets: no conversation file looks like that
        raise located(path, None, "is nested too deeply to be a list of conversations") from None
    if not isinstance(rows, list):
        raise located(path, None, f"holds a JSON {_kind(rows)}; expected a list of conversations (MRBench or BEA 2025)")
    if not rows:
        raise located(path, None, "holds an empty list; expected at least one conversation")
    return rows


def _conversation(row: Any, index: int, path: Path) -> HumanConversation:
    if not isinstance(row, dict):
        raise _row_error(path, index, None, "<row>", f"is a JSON {_kind(row)}; expected an object (one conversation)")
    raw_id = row.get("conversation_id")
    # bool is an int to Python, and True is no id.
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or str(raw_id).strip() == "":
        raise _row_error(path, index, None, "conversation_id", f"is {_shown(raw_id)}; expected a non-empty string")
    conversation_id = str(raw_id)

    def fail(field: str, message: str) -> InputError:
        return _row_error(path, index, conversation_id, field, message)

    history = row.get("conversation_history")
    if not isinstance(history, str) or not history.strip():
        raise fail("conversation_history", f"is {_shown(history)}; expected the dialogue so far as a non-empty string")
    try:
        turns = parse_history(history)
    except ValueError as exc:
        raise fail("conversation_history", str(exc)) from None
    keys = [key for key in RESPONSE_KEYS if key in row]
    if len(keys) != 1:
        found = "both" if keys else "neither"
        raise fail(
            "/".join(RESPONSE_KEYS),
            f"the row has {found}; expected exactly one: anno_llm_responses (MRBench) or tutor_responses (BEA 2025)",
        )
    container = row[keys[0]]
    if not isinstance(container, dict) or not container:
        raise fail(keys[0], f"is {_shown(container)}; expected a non-empty object of tutor name -> response")
    responses = tuple(
        _response(value, tutor, f"{keys[0]}.{tutor}", conversation_id, fail) for tutor, value in container.items()
    )
    return HumanConversation(
        index=index,
        conversation_id=conversation_id,
        history=history,
        turns=turns,
        source=_optional_text(row, "Data", fail),
        split=_optional_text(row, "Split", fail),
        topic=_optional_text(row, "Topic", fail),
        ground_truth_solution=_optional_text(row, "Ground_Truth_Solution", fail),
        responses=responses,
    )


def _response(value: Any, tutor: str, field: str, conversation_id: str, fail: _Fail) -> HumanResponse:
    if not isinstance(value, dict):
        raise fail(field, f"is {_shown(value)}; expected an object with 'response' (and 'annotation')")
    text = value.get("response")
    if not isinstance(text, str) or not text.strip():
        raise fail(f"{field}.response", f"is {_shown(text)}; expected the tutor's response as a non-empty string")
    annotation = value.get("annotation")
    if annotation is None:  # the BEA 2025 test set has none; a null is read the same way
        annotation = {}
    if not isinstance(annotation, dict):
        raise fail(f"{field}.annotation", f"is {_shown(annotation)}; expected an object of dimension -> label")
    for dimension, label in annotation.items():
        if dimension not in HUMAN_DIMENSIONS:
            raise fail(
                f"{field}.annotation.{dimension}",
                f"is not a known dimension; expected one of {list(HUMAN_DIMENSIONS)} (exact spelling)",
            )
        if label is not None and label not in HUMAN_DIMENSIONS[dimension]:
            raise fail(
                f"{field}.annotation.{dimension}",
                f"has label {_shown(label)}; expected one of {list(HUMAN_DIMENSIONS[dimension])}",
            )
    # A null label counts as absent, like a missing key: some exports write null for "not annotated".
    labels = {name: annotation[name] for name in HUMAN_DIMENSIONS if annotation.get(name) is not None}
    return HumanResponse(conversation_id=conversation_id, tutor=tutor, text=text, labels=labels)


def _optional_text(row: dict[str, Any], key: str, fail: _Fail) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise fail(key, f"is {_shown(value)}; expected a string when present")
    return None if value.strip() in ("", NOT_AVAILABLE) else value


def _row_error(path: str | Path, index: int, conversation_id: str | None, field: str, message: str) -> InputError:
    which = f"list index {index}" + (f", conversation_id {conversation_id!r}" if conversation_id is not None else "")
    return InputError(f"{path}: row {index + 1} ({which}): field '{field}': {message}")


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _shown(value: Any) -> str:
    if value is None:
        return "missing or null"
    if isinstance(value, str):
        return f"{value[:60]!r}" if value.strip() else "an empty string"
    return f"a JSON {_kind(value)}"
