"""Dialogue text made safe to place between the judge prompt's tags.

Unforgeable delimiters: every piece of per-dialogue text goes through :func:`escape`. The prompt's
structure inside text rests on three characters (:data:`STRUCTURAL`): ``<`` and ``>`` delimit every
tag and ``&`` starts every entity. The escaping rule is decided from Unicode's own data
(``unicodedata`` categories, names, NFKC/NFD forms, confusables.txt, ``html.entities``), never a
hand list of characters; :func:`_build_tables` states it in full:

- escaped to entities: ``&``, ``<``, ``>``; and every look-alike that only *reads as* them (NFKC
  form, confusables skeleton, or an angle bracket/quotation/arrowhead by name) as the entities of
  what it reads as (``＜`` -> ``&lt;``, ``ᐸ`` -> ``&lt;``, ``≪`` -> ``&lt;&lt;``, ``＆`` -> ``&amp;``);
- escaped to character references, keeping their meaning: symbols of their own built on them (Unicode
  name contains LESS-THAN, GREATER-THAN or AMPERSAND, or canonical decomposition contains ``<``/``>``)
  as the HTML5 named entity or ``&#xHHHH;`` (``≤`` -> ``&le;``, ``⩹`` -> ``&ltcir;``, ``⫷`` ->
  ``&#x2AF7;``); surrogate, private-use and unassigned code points as ``&#xHHHH;``; combining marks
  that would attach to an entity or to the tag before the text as ``&#xHHHH;``, after composing
  them where Unicode composes them (``<`` + U+0338 -> ``&nlt;``);
- removed: format characters (Cf: zero-width, bidi controls, tags, ...), the tag block, variation
  selectors, U+034F and control characters other than tab and newline (U+2028/2029 -> newline);
- unchanged: everything else, so ordinary text, digits, ``+ − × ÷ = /``, LaTeX, accents, CJK and
  emoji reach the judge as written.

After escaping, no turn contains a ``<``, a ``>``, a look-alike of them or a bare ``&``, so every tag
the judge sees (``<dialogue>``, ``<turn ...>``) was written by this module: a tutor cannot close the
dialogue block, open a fake rubric section, or start a fake turn. The system message tells the judge
how entities read and to treat everything inside the tags as data and to ignore instructions found
there.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

# The characters that carry the prompt's structure inside text: ``<`` and ``>`` delimit every tag
# the renderer writes and ``&`` starts every entity escaping writes. ``/``, ``=`` and ``"`` mean
# something only inside a tag, which escaped text can never open (``"`` is also escaped in
# attribute values, see :func:`attr`).
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
STRUCTURAL = frozenset(_ENTITIES)

_BRACKET_CATEGORIES = frozenset({"Ps", "Pe", "Pi", "Pf", "Sk"})
_BRACKET_NAMES = ("ANGLE BRACKET", "ANGLE QUOTATION", "LEFT ARROWHEAD", "RIGHT ARROWHEAD")
_UNKNOWN = frozenset({"Cs", "Co", "Cn"})  # surrogate, private use, unassigned: no properties to judge by
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


class EscapeTables(NamedTuple):
    """What :func:`escape` uses, built once from Unicode data (see :func:`_build_tables`)."""

    looks: dict[str, str]  # look-alike -> the ASCII it reads as (``ᐸ`` -> ``<``)
    removed: frozenset[int]  # code points deleted
    table: dict[int, str | None]  # the ``str.translate`` table
    references: dict[str, str]  # character reference -> the character it names (``&le;`` -> ``≤``)
    attached: re.Pattern[str]  # an entity followed by combining marks that would attach to it
    leading: re.Pattern[str]  # combining marks at the start of a text
    quotes: dict[int, str]  # ``"`` and its NFKC look-alikes -> ``&quot;`` (attribute values)
    ascii_removed: re.Pattern[str]  # the ASCII code points removed (controls other than tab and newline)


def _named(char: str, html5: Mapping[str, list[str]]) -> str:
    """``char`` as a character reference: its HTML5 named entity (lower case, then shortest) or ``&#xHHHH;``."""
    names = html5.get(char)
    if names:
        return "&" + min(names, key=lambda n: (n != n.lower(), len(n), n))
    return f"&#x{ord(char):X};"


def _ranges(code_points: Sequence[int]) -> str:
    """A regex character class body for the sorted ``code_points``."""
    parts, start, prev = [], code_points[0], code_points[0]
    for cp in [*code_points[1:], -2]:
        if cp != prev + 1:
            parts.append(re.escape(chr(start)) + ("" if start == prev else "-" + re.escape(chr(prev))))
            start = cp
        prev = cp
    return "".join(parts)


def _build_tables() -> EscapeTables:
    """The escaping tables, from Unicode data rather than hand lists (one pass over every code point).

    A character ``c`` is, in this order of precedence:

    1. **structural** (``&``, ``<``, ``>``): written ``&amp;``, ``&lt;``, ``&gt;``;
    2. **removed**: control characters other than tab and newline (Cc), every format character (Cf:
       zero-width, bidi embeddings/overrides/isolates/marks, U+061C, U+180E, interlinear annotation,
       tags, ...), the whole tag block U+E0000-E007F (it can spell hidden text), variation selectors
       (FE00-FE0F, E0100-E01EF, Mongolian 180B-180F) and the combining grapheme joiner U+034F;
       U+2028/U+2029 become newlines;
    3. a **look-alike** that only *reads as* structural characters, written as the entities of what
       it reads as: every character whose NFKC form contains one (``＜``, ``﹤``, ``＆``, as a
       normalising tokenizer sees it), every source in Unicode's confusables.txt (as shipped by
       ``confusable_homoglyphs``, which stores each line both ways) whose skeleton contains one
       (``ᐸ`` -> ``<``, ``≪`` -> ``<<``, ``ꝸ`` -> ``&``), and every bracket/quotation punctuation
       (Ps, Pe, Pi, Pf) or modifier letter (Sk) named ``... ANGLE BRACKET``, ``... ANGLE QUOTATION
       MARK`` or ``... LEFT/RIGHT ARROWHEAD`` (``«``, ``《``, ``⟪``, ``⧼``, ``˱``): LEFT -> ``<``,
       RIGHT -> ``>``, doubled for DOUBLE;
    4. a **symbol of its own** built on one: every symbol or punctuation (S*, P*) whose Unicode name
       contains a structural character's name (LESS-THAN, GREATER-THAN, AMPERSAND, taken from
       ``unicodedata.name``) and every character whose canonical decomposition contains one
       (``≮`` = ``<`` + U+0338). These mean something else (``≤`` is not ``<``), so they are written
       exactly, as a character reference: the HTML5 named entity when the standard library's
       ``html.entities`` has one (``&le;``, ``&ge;``, ``&nlt;``, ``&ltcir;``, ``&olt;``), else
       ``&#xHHHH;`` (``⫷`` -> ``&#x2AF7;``);
    5. **unknown** (surrogate Cs, private use Co, unassigned Cn, including code points a newer
       Unicode may have assigned): written ``&#xHHHH;``, so nothing escaping cannot classify reaches
       the judge raw (astral ones are found per call, see :func:`escape`);
    6. anything else passes unchanged: letters, digits, ``+ − × ÷ = / \\ ^ { } $``, LaTeX, accented
       letters, CJK, emoji, and combining marks on ordinary characters.

    Combining marks (M*) that follow an escaped character would attach to the ``;`` of its entity
    (``<`` + U+0338 draws ``≮``); :func:`escape` handles them with :attr:`EscapeTables.attached`.
    """
    import html.entities

    from confusable_homoglyphs.confusables import confusables_data

    def structural(text: str) -> bool:
        return any(s in text for s in STRUCTURAL)

    looks: dict[str, str] = {}
    for key, glyphs in confusables_data.items():
        for glyph in glyphs:
            char = glyph["c"]
            if structural(key) and len(char) == 1:
                looks[char] = key
            if structural(char) and len(key) == 1:
                looks[key] = char
    html5: dict[str, list[str]] = {}
    for name, value in html.entities.html5.items():
        if name.endswith(";") and len(value) == 1:
            html5.setdefault(value, []).append(name)
    keywords = tuple(unicodedata.name(s).removesuffix(" SIGN") for s in sorted(STRUCTURAL))
    removed = set(range(0xE0000, 0xE0080))
    removed.update(range(0xFE00, 0xFE10), range(0xE0100, 0xE01F0), range(0x180B, 0x1810), [0x034F])
    removed.update(range(0x09), range(0x0B, 0x20), range(0x7F, 0xA0))
    own: dict[str, str] = {}
    unknown: list[int] = []
    marks: list[int] = []
    quotes = {ord('"'): "&quot;"}
    category, decomposition, normalize = unicodedata.category, unicodedata.decomposition, unicodedata.normalize
    for cp in range(sys.maxunicode + 1):
        char = chr(cp)
        kind = category(char)
        if kind == "Cf":
            removed.add(cp)
        elif kind[0] == "M":
            marks.append(cp)
        elif kind in _UNKNOWN:
            if cp <= 0xFFFF:
                unknown.append(cp)
        elif kind[0] in "SP":
            name = unicodedata.name(char, "")
            if kind in _BRACKET_CATEGORIES and any(part in name for part in _BRACKET_NAMES):
                looks.setdefault(char, ("<" if "LEFT" in name else ">") * (2 if "DOUBLE" in name else 1))
            elif any(word in name for word in keywords):
                own[char] = _named(char, html5)
        decomposed = decomposition(char)
        if decomposed.startswith("<"):  # a compatibility decomposition
            nfkc = normalize("NFKC", char)
            if structural(nfkc):
                looks.setdefault(char, nfkc)
            elif '"' in nfkc:
                quotes[cp] = "&quot;"
        elif decomposed and structural(normalize("NFD", char)):
            own[char] = _named(char, html5)
    for s in STRUCTURAL:
        looks.pop(s, None)
        own.pop(s, None)
    for char in looks:
        own.pop(char, None)
    table: dict[int, str | None] = {
        **{cp: f"&#x{cp:X};" for cp in unknown},
        **{ord(c): ref for c, ref in own.items()},
        **{ord(c): _entities(reading) for c, reading in looks.items()},
        **dict.fromkeys(removed),
        **_LINE_BREAKS,
        **{ord(s): entity for s, entity in _ENTITIES.items()},
    }
    # escape's ASCII fast path relies on this: in ASCII only the structural characters are rewritten
    assert {cp for cp, v in table.items() if cp < 0x80 and v is not None} == set(map(ord, STRUCTURAL))
    references = {ref: c for c, ref in own.items()} | {entity: s for s, entity in _ENTITIES.items()}
    mark_class = _ranges(marks)
    return EscapeTables(
        looks=looks,
        removed=frozenset(removed),
        table=table,
        references=references,
        attached=re.compile(f"(&(?:#x[0-9A-F]+|[A-Za-z][A-Za-z0-9]*);)([{mark_class}]+)"),
        leading=re.compile(f"[{mark_class}]+"),
        quotes=quotes,
        ascii_removed=re.compile(f"[{_ranges(sorted(cp for cp in removed if cp < 0x80))}]"),
    )


# LINE / PARAGRAPH SEPARATOR separate words: deleting them would glue words together, and a newline
# forges nothing a real newline cannot.
_LINE_BREAKS = {0x2028: "\n", 0x2029: "\n"}


def _entities(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@lru_cache(maxsize=1)
def escape_tables() -> EscapeTables:
    """The tables of :func:`escape` (see :func:`_build_tables`).

    Built on first use, not at import: the pass over every code point costs about 0.5 s, which
    commands that never build a judge prompt should not pay.
    """
    return _build_tables()


def escape(text: str) -> str:
    """``text`` made safe to place between the prompt's tags (the rule: :func:`_build_tables`).

    One ``str.translate`` (three ``str.replace`` for ASCII text): ``&``, ``<``, ``>`` become
    ``&amp;``/``&lt;``/``&gt;``; a look-alike becomes the entities of what it reads as (``ᐸ`` -> ``&lt;``, ``≪`` -> ``&lt;&lt;``, so
    ``3 ᐸ 5`` still reads as ``3 < 5``); a symbol built on ``<``, ``>`` or ``&`` becomes a
    character reference (``≤`` -> ``&le;``, ``⩹`` -> ``&ltcir;``), so the math keeps its meaning;
    surrogate, private-use and unassigned code points become ``&#xHHHH;``; format, tag,
    variation-selector and control characters (except tab and newline) are removed and
    U+2028/U+2029 become newlines. Text that is then not ASCII gets two more passes: combining
    marks right after an entity are composed with the character it stands for where Unicode
    composes them (NFC: ``<`` + U+0338 -> ``≮`` -> ``&nlt;``) and otherwise written as ``&#xHHHH;``,
    as are marks at the start of the text (they would attach to the tag before it). The result
    contains no ``<`` or ``>``, no look-alike of them, no ``&`` that does not start an entity, no
    format character and no combining mark on an entity, so it cannot open or close a tag.
    """
    tables = escape_tables()
    if text.isascii():  # the common case: same result as the table, about 10 times faster
        if tables.ascii_removed.search(text):
            text = tables.ascii_removed.sub("", text)
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = text.translate(tables.table)
    if out.isascii():
        return out
    astral = _ASTRAL.findall(out)
    if astral:
        unknown = {ord(c): _references(c) for c in set(astral) if unicodedata.category(c) in _UNKNOWN}
        if unknown:
            out = out.translate(unknown)
    if "&" in out:
        out = tables.attached.sub(_attached_marks, out)
    lead = tables.leading.match(out)
    if lead:
        out = _references(lead[0]) + out[lead.end() :]
    return out


def _references(chars: str) -> str:
    return "".join(f"&#x{ord(c):X};" for c in chars)


def _attached_marks(match: re.Match[str]) -> str:
    return _attach(match[1], match[2])


@lru_cache(maxsize=1024)
def _attach(entity: str, marks: str) -> str:
    """An entity and the combining marks after it: composed where Unicode composes them, else referenced."""
    tables = escape_tables()
    base = tables.references.get(entity) or chr(int(entity[3:-1], 16))  # else an unknown code point's &#xHHHH;
    composed = unicodedata.normalize("NFC", base + marks)
    if composed[0] != base:
        return composed[0].translate(tables.table) + _references(composed[1:])
    return entity + _references(composed[1:])


def attr(value: object) -> str:
    """An escaped attribute value (also escapes the double quote that delimits it, and its look-alikes)."""
    return escape(str(value)).translate(escape_tables().quotes)
