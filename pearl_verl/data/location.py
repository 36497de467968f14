"""The one data location: where commands, tests and benchmarks find the public data sets.

The data sets (GSM8K, MATH-500, MathDial, MathTutorBench, StepVerify; see ``data/README.md``) are
committed to the repository's top-level ``data/`` folder, outside the wheel. The folder is, in order:

1. the ``--data-dir`` argument of a command (``explicit``),
2. the environment variable ``PEARL_VERL_DATA_DIR``,
3. ``data/`` beside the ``pearl_verl`` package: a clone, or an editable install of one.

A pip-installed wheel has no ``data/``: such a user points 1. or 2. at a copy of the folder.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from pearl_verl.errors import InputError

logger = logging.getLogger(__name__)

ENV_VAR = "PEARL_VERL_DATA_DIR"
"""Environment variable naming the data folder when no ``--data-dir`` is given."""
CLONE_DATA_DIR = Path(__file__).resolve().parents[2] / "data"
"""The repository's ``data/`` folder; present in a clone and an editable install, not in a wheel."""
SHIPPED_MATHDIAL = Path(__file__).resolve().parents[1] / "resources" / "data" / "mathdial" / "test_first64.jsonl"
"""64 MathDial problems inside the wheel: train-local's default problems, whose words the tiny tokenizer learns."""


def data_dir(explicit: str | Path | None = None) -> Path:
    """The data folder: ``explicit``, else ``$PEARL_VERL_DATA_DIR``, else the clone's ``data/``.

    Args:
        explicit: a folder given on the command line (``--data-dir``); None or "" when not given.

    Returns:
        The folder, which exists.

    Raises:
        InputError: the chosen folder does not exist; the message names every place looked at and
            how to point at a data folder.
    """
    if explicit is not None and str(explicit) != "":
        return _existing(Path(explicit), f"--data-dir {explicit}")
    from_env = os.environ.get(ENV_VAR, "")
    if from_env:
        return _existing(Path(from_env), f"{ENV_VAR}={from_env}")
    # setup.py beside it tells a clone's data/ from a stray site-packages/data of some other wheel.
    if CLONE_DATA_DIR.is_dir() and (CLONE_DATA_DIR.parent / "setup.py").is_file():
        return CLONE_DATA_DIR
    raise InputError(
        f"no data folder: no --data-dir was given, {ENV_VAR} is not set, and {CLONE_DATA_DIR} is not the data/ "
        "folder of a clone (an installed wheel ships no data/). Run from a clone of the pearl_verl repository, or point "
        f"--data-dir or {ENV_VAR} at a copy of its data/ folder."
    )


def _existing(folder: Path, given: str) -> Path:
    if not folder.is_dir():
        raise InputError(
            f"data folder {folder} (from {given}) does not exist; point it at a copy of the repository's data/ "
            "folder (gsm8k/, math500/, mathdial/, mathtutorbench/, stepverify/)."
        )
    return folder


def dataset_file(path: str | Path, explicit_dir: str | Path | None = None) -> Path:
    """A dataset file as given when it exists, else the same name inside the data folder.

    Lets ``pearl-verl simulate gsm8k/test.jsonl`` work from any directory, while
    ``data/gsm8k/test.jsonl`` from a clone's root or any existing path is used as is.

    Args:
        path: a file path, absolute or relative to the working directory or to the data folder.
        explicit_dir: a ``--data-dir`` argument, if the command has one.

    Returns:
        The existing file, or ``path`` unchanged when neither place has it, so that the reader's
        own error names the path the user gave.
    """
    given = Path(path)
    try:
        if given.exists() or given.is_absolute():
            return given
        inside = data_dir(explicit_dir) / given
        found = inside.exists()
    except (ValueError, OSError):  # no data folder; a name no file system holds (the reader names it)
        return given
    if found:
        logger.info("reading %s from the data folder: %s", given, inside)
        return inside
    return given
