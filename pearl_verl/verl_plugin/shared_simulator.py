"""One student simulator per process and configuration, shared by every agent-loop instance.

verl instantiates an agent loop per sample, so the simulator (its LLM client, connection pool and
knowledge cache) must outlive them; it is built on first use from the root ``pearl.student`` section.
"""

from __future__ import annotations

import threading
from typing import Any

from pearl_verl.dialogue.student_contract import StudentSimulator

_CACHE: dict[Any, StudentSimulator] = {}
_LOCK = threading.Lock()


def simulator_for(pearl_config: Any) -> StudentSimulator:
    """The process-wide simulator for ``pearl_config.student`` (a frozen, hashable config)."""
    from pearl_verl.student.factory import build_simulator  # the simulator package is heavy to import

    settings = pearl_config.student
    with _LOCK:
        if settings not in _CACHE:
            _CACHE[settings] = build_simulator(settings)
        return _CACHE[settings]
