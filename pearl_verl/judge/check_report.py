"""How ``judge-check`` ends, on the contrast pairs and on human labels alike: notes, the JSON report, one verdict."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pearl_verl.judge.backends import JUDGE_BACKENDS
from pearl_verl.llm.chat_types import UsageMeter
from pearl_verl.write_whole import write_whole


def finish_check(result: dict[str, Any], judge: Any, backend: str, output: Path | None) -> int:
    """Print the judge's usage note and the verdict, write ``result`` to ``output``; the exit code.

    Args:
        result: the report (``passed``, ``verdict``, ``failures``).
        judge: the judge that was checked (its usage meter says which structured output the server took).
        backend: the judge backend; a CPU judge is named for what it is (its ``note``).
        output: where ``-o`` asked for the JSON report, or None.

    Returns:
        0 when the judge passed, 1 with the first failures and the verdict on stderr otherwise.
    """
    note = UsageMeter.note_of(judge)
    if note:
        print(note)
    if JUDGE_BACKENDS[backend].note:
        print(f"note: {JUDGE_BACKENDS[backend].note}")
    if output:
        write_whole(output, json.dumps(result, indent=2) + "\n")
    if result["passed"]:
        print(result["verdict"])
        return 0
    for failure in result["failures"][:3]:
        print(f"  failed: {failure}", file=sys.stderr)
    print(f"error: {result['verdict']}", file=sys.stderr)
    return 1
