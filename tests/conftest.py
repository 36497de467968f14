"""Shared test settings: every test runs offline (no model or dataset hub is reachable)."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _live(entry: Path) -> bool:
    return (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"


def find_processes(*, name: str | None = None, env: str | None = None) -> list[str]:
    """The command lines of live (not zombie) processes named ``name...`` (their argv[0], as ``exec -a``
    sets it; a shell's own command line that merely mentions the name does not count) or whose
    environment holds ``env`` (every process a command starts inherits it: verl's, Ray's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit():
                continue
            cmdline = (entry / "cmdline").read_bytes()
            if name is not None and not cmdline.split(b"\0", 1)[0].startswith(name.encode()):
                continue
            if env is not None and env.encode() not in (entry / "environ").read_bytes():
                continue
            if _live(entry):
                found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


@pytest.fixture(name="processes_with")
def processes_with_fixture():
    """:func:`find_processes`, for tests (conftest modules are not importable under importlib mode)."""
    return find_processes
