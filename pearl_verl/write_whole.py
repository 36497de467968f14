"""Writing an output file whole: into a temporary file beside it, then renamed over it.

A report is written after the work that made it. If the write fails (a full disk, a kill, an error in the middle of
the text), the target keeps what it held before, or does not exist, and the temporary file is removed: never half a
file, never an earlier run's report destroyed by a failed one. The rename is atomic because the temporary file is
in the target's own folder, on the same file system. The folders above the target are created (the output flags'
type checked at parse that they can be). A symbolic link is followed: the file it points to is replaced, not the
link. Every key the program took from the environment (:func:`~pearl_verl.redact.remember_secret`) is redacted
from what is written, as from what it prints.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pearl_verl.redact import redact_remembered


def write_whole(path: str | os.PathLike[str], text: str | Iterable[str]) -> Path:
    """Write ``text`` (one string, or pieces written one after another) to ``path`` whole; returns the path written.

    The new file gets the mode a plain ``open(path, "w")`` would give it: the old file's when there is one, else
    0666 less the umask (a temporary file alone would be 0600).
    """
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name[:200]}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            # a key the program took from the environment never reaches a file, whatever echoed it (a judge's reply)
            if isinstance(text, str):
                out.write(redact_remembered(text))
            else:
                out.writelines(redact_remembered(piece) for piece in text)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
