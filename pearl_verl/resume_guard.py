"""The settings a resumable output was written with, kept beside it, so a rerun cannot mix two runs.

``simulate --out``, ``gen-sft -o`` and ``judge -o`` append finished dialogues (or judgements) and
resume on a rerun. A rerun with another model, tutor, seed or structured-output mode would add
those of a different run to the same file and one summary would count both, so the settings that
decide them are written next to the output and a rerun with other values is refused, naming them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pearl_verl.errors import InputError
from pearl_verl.jsonl import read_json
from pearl_verl.write_whole import write_whole


def check_resume(output: Path, settings_path: Path, settings: Mapping[str, Any], pick: str,
                 missing_ok: bool = False, what: str = "dialogues") -> bool:
    """Refuse to resume ``output`` when it was written with other ``settings``.

    Args:
        output: the file a rerun appends to; nothing to check when it is absent or empty.
        settings_path: where the settings of the run that wrote it are.
        settings: this run's.
        pick: the flag that chooses another output, for the message (``--out``).
        missing_ok: an output without a settings file (written by a version that kept none) is
            taken as this run's; otherwise it is refused like one with other settings.
        what: what the output holds, for the message.

    Returns:
        Whether ``output`` holds anything to resume.

    Raises:
        InputError: naming the settings that differ.
    """
    if not output.exists() or not output.stat().st_size:
        return False
    if not settings_path.exists() and missing_ok:
        return True
    stored = read_json(settings_path, "run settings") if settings_path.exists() else None
    current = json.loads(json.dumps(dict(settings)))  # as stored: tuples are lists, paths strings
    if stored != current:
        changed = ", ".join(sorted(k for k in current if not isinstance(stored, dict) or stored.get(k) != current[k]))
        raise InputError(
            f"{output} holds another run's {what} (settings differ: {changed or 'no settings file'}); "
            f"pick another {pick}, or delete it to start over."
        )
    return True


def write_settings(settings_path: Path, settings: Mapping[str, Any]) -> None:
    write_whole(settings_path, json.dumps(dict(settings), indent=1, default=str))
