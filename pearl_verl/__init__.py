"""pearl_verl: PEARL (pedagogically aligned RL for Socratic math tutors) as a verl plugin.

The core (this package minus ``verl_plugin``) never imports verl. Importing verl loads
``pearl_verl.verl_plugin.register`` through the ``verl.plugins`` entry point. The names below load
on first use (PEP 562), so that ``import pearl_verl`` and ``pearl-verl --help`` need no torch.

The layers, lowest first; a module imports from its own layer and the ones below, never above
(``tests/test_layers.py`` holds this, and that no import circle exists between modules):

1. foundation: ``errors``, ``ranges``, ``redact``, ``dims``, ``jsonl``, ``stats``, ``progress``,
   ``children``, ``async_run`` (the one way a command runs its event loop), ``out_paths``, ``write_whole``,
   ``listen``, ``config_flags``, ``resume_guard``, ``strict_dataclass``, ``row_kinds`` (what each written row
   is), ``resources`` (shipped prompts and data);
2. ``llm``: the OpenAI-compatible client and its test servers;
3. the method, in this order inside:

   a. ``dialogue``: problems, answers, the dialogue's records and runner, and the two roles' contracts
      (``student_contract``, ``tutor_contract``);
   b. ``tutor``: the instruction, the served, scripted and teaching-style tutors;
   c. ``knowledge``: the curriculum graph and the problems' decomposition into its units;
   d. ``student``: the simulator (profile, knowledge state, planner, realiser, backends);
   e. ``data``: problem files, student conditions and verl's parquet;
   f. ``judge``: the rubric, the judges and the reward fields;
   g. ``advantage``: the estimator, its settings and metrics;
   h. ``pearl_config``: the root ``pearl:`` section over all of them;
   i. the method's commands, each package's ``*_cli`` modules: above everything they run;
4. the tools around it: ``eval``, ``sft``, ``compare``, ``view``, ``faults``, ``models`` (the
   models a run starts from: the tiny offline ones, SmolLM2 from its wheel; and ``hf_generate``, the one
   HF-generate path, for verl's ``hf`` rollout and the evaluations' local chat backend);
5. verl: ``verl_plugin`` (with ``verl_plugin.cpu``, what verl needs on a machine without a GPU and its
   configs), ``train_local`` (the ``train-local`` launcher of verl's trainer) and ``plan`` (the capacity
   plan of a verl recipe, read from the config it composes);
6. ``cli``.

One arrow runs up, on purpose: ``compare.screenshot`` drives the command line (``cli``) as a user
does, to regenerate the docs' picture of the study page.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "DIMENSIONS": "pearl_verl.dims",
    "AdvantageConfig": "pearl_verl.advantage.advantage_config",
    "PearlConfig": "pearl_verl.pearl_config",
    "compute_pearl_advantage": "pearl_verl.advantage.estimator",
    "compute_pearl_advantage_breakdown": "pearl_verl.advantage.estimator",
    "load_pearl_config": "pearl_verl.pearl_config",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pearl_verl' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
