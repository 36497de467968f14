"""The viewer page: one HTML file with its data, script and style inside, opened from disk with no server.

Safety: the dialogues are model output and may hold anything. The data travels gzip-compressed and
base64-encoded in a ``<script type="application/octet-stream">`` block (base64 has no ``<``, so no
text can close the block); the page's script puts text into the page only as text nodes (never as
HTML); and a Content-Security-Policy allows nothing but the page's own script and style (by hash),
so even an injected tag could not run or load anything.

Size: problems and criterion names are stored once, numbers rounded to 3 decimals, each record a
short-keyed object, the whole gzip-compressed (the browser's DecompressionStream unpacks it: Chrome
80+, Firefox 113+, Safari 16.4+); larger inputs than ``max_dialogues`` are sampled (flagged
dialogues first, then a fixed random sample), and the page says so.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import math
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pearl_verl.dims import DIMENSIONS
from pearl_verl.view.records import FLAGS, Reading
from pearl_verl.write_whole import write_whole

ASSETS = Path(__file__).resolve().parent
MAX_DIALOGUES = 10_000


def build_page(records: Sequence[dict[str, Any]], title: str = "pearl-verl view", max_dialogues: int = MAX_DIALOGUES,
               seed: int = 0, skipped: Sequence[str] = ()) -> str:
    """The page for ``records`` (from :func:`pearl_verl.view.records.read_sources`).

    ``skipped``: the input rows left out (:attr:`pearl_verl.view.records.Reading.skipped`), which
    the page counts, so that a reader knows it shows less than the files hold.
    """
    shown, note = sample(records, max_dialogues, seed)
    title = _unicode(title)  # a path's undecodable bytes come from argv as lone surrogates
    data = encode(shown)
    notes = [note, skipped_note(skipped)]
    data.update({"title": title, "total": len(records), "note": "; ".join(n for n in notes if n), "flags": FLAGS})
    script = (ASSETS / "viewer.js").read_text(encoding="utf-8")
    style = (ASSETS / "viewer.css").read_text(encoding="utf-8")
    policy = (f"default-src 'none'; script-src '{_hash(script)}'; style-src '{_hash(style)}'; img-src data:; "
              "base-uri 'none'; form-action 'none'")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{style}</style>",
        "</head><body>",
        '<noscript>This page needs JavaScript (its own inline script only; nothing is loaded).</noscript>',
        f'<script id="pearl-data" type="application/octet-stream">{pack(data)}</script>',
        f"<script>{script}</script>",
        "</body></html>",
    ])


def write_page(records: Sequence[dict[str, Any]] | Reading, path: Path, **kwargs: Any) -> Path:
    """:func:`build_page` written to ``path`` (a :class:`Reading` brings its skipped rows along).

    Raises:
        OSError: when ``path`` cannot be written; it is written whole (:func:`~pearl_verl.write_whole.write_whole`),
            so a failed write leaves no half page behind and an earlier page as it was.
    """
    if isinstance(records, Reading):
        kwargs.setdefault("skipped", records.skipped)
        records = records.records
    write_whole(path, build_page(records, **kwargs))
    return path


def skipped_note(skipped: Sequence[str], examples: int = 3) -> str:
    """What the page says of the input rows it left out: how many, and the first few with their reasons."""
    if not skipped:
        return ""
    more = f" and {len(skipped) - examples:,} more" if len(skipped) > examples else ""
    return (f"{len(skipped):,} input row{'s' if len(skipped) != 1 else ''} could not be read and "
            f"{'are' if len(skipped) != 1 else 'is'} not shown: " + "; ".join(skipped[:examples]) + more)


def sample(records: Sequence[dict[str, Any]], limit: int, seed: int = 0) -> tuple[list[dict[str, Any]], str]:
    """At most ``limit`` records, flagged ones first, the rest a fixed random sample; and the note saying so."""
    if len(records) <= limit:
        return list(records), ""
    flagged = [i for i, r in enumerate(records) if r["flags"]][:limit]
    rest = [i for i, r in enumerate(records) if not r["flags"]]
    chosen = set(flagged) | set(random.Random(seed).sample(rest, min(len(rest), limit - len(flagged))))
    note = (f"showing {len(chosen):,} of {len(records):,} dialogues: every flagged one ({len(flagged):,}) and a fixed "
            f"random sample of the rest (pearl-verl view --max-dialogues to change)")
    return [records[i] for i in sorted(chosen)], note


def encode(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The page's data: tables of problems and criteria, and one short-keyed object per record."""
    problems: dict[tuple[str, str, str], int] = {}
    criteria: dict[tuple[str, str], int] = {}
    out = []
    for rec in records:
        key = (rec["problem_id"], rec["question"], rec["answer"])
        problem = problems.setdefault(key, len(problems))
        crit = None
        if rec["criteria"]:
            crit = [[criteria.setdefault((c["dimension"], c["criterion"]), len(criteria)), _num(c["score"]),
                     c["rationale"] or ""] for c in rec["criteria"]]
        out.append(_compact({
            "i": rec["id"], "sl": rec["slot"], "s": rec["source"], "st": rec["step"], "g": rec["group"],
            "tu": rec["tutor"], "p": problem, "ab": rec["ability"], "pf": rec["profile"], "mc": rec["misconception"],
            "er": rec["end_reason"],
            "t": [[1 if t["role"] == "tutor" else 0, t["text"], _state(t["state"])] for t in rec["turns"]],
            "d": [_num(rec["dims"].get(d)) for d in DIMENSIONS] if rec["dims"] else None,
            "ok": None if rec["judge_ok"] is None else int(rec["judge_ok"]), "ga": rec["gate"],
            "je": rec["judge_error"], "c": crit, "r": _num(rec["reward"]),
            "sh": [_num(rec["shaped"].get(d)) for d in DIMENSIONS] if rec["shaped"] else None,
            "a": _num(rec["advantage"]), "f": rec["flags"], "lk": rec["leak_turns"], "is": rec.get("issues"),
        }))
    return {
        "dims": list(DIMENSIONS),
        "problems": [list(key) for key in problems],
        "criteria": [list(key) for key in criteria],
        "records": out,
    }


def _state(state: dict[str, Any] | None) -> list[Any] | None:
    if state is None:
        return None
    return [state["intent"], state["attempt"], state["mastery"]]


def _num(value: Any) -> float | None:
    """Rounded for size; a non-finite number (the records never hold one) as None, never as JSON's invalid NaN."""
    if value is None or not math.isfinite(value := float(value)):
        return None
    return round(value, 3)


def _unicode(text: str) -> str:
    """``text`` with any unpaired surrogate as U+FFFD: UTF-8 cannot encode one, and the page is UTF-8."""
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


def _compact(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rec.items() if v not in (None, [], "")}


def pack(data: Any) -> str:
    """``data`` as strict JSON, gzip-compressed, base64-encoded: what the page's data block holds.

    Strict: the browser's JSON.parse refuses ``NaN`` and ``Infinity``, and the whole page would stay
    blank, so such a value is an error here (the records hold none: they are checked as they are read).
    """
    raw = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def unpack(text: str) -> Any:
    """Inverse of :func:`pack` (for tests and tools)."""
    return json.loads(gzip.decompress(base64.b64decode(text)))


def _hash(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")
