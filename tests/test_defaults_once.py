"""Each number the method defaults to is written once: in the dataclass of its config section.

The sections are the estimator (``pearl.advantage``), the agent loop (``pearl.agent``), the student
(``pearl.student``), the failure guard (``pearl.failure_guard``) and the judge (``reward.reward_kwargs``). A
second place that writes the same number for the same setting, a Python default, a recipe's ``+pearl...=``
override, a bash default (``PEARL_GAMMA:=0.98``) or a YAML key, is a copy that drifts when the first one
changes; it must take the value from the section instead, or leave the setting to it. Numbers only: a
choice of text (a backend's name) is checked against its registry wherever it is set.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pearl_verl.dialogue.episode_runner import EpisodeLimits
from pearl_verl.judge.judge_config import JudgeConfig
from pearl_verl.judge.llm_judge import PAPER_JUDGE_SAMPLING, LLMJudge
from pearl_verl.pearl_config import AgentConfig, PearlConfig
from pearl_verl.plan.capacity import RecipeSettings
from pearl_verl.train_local.local_config import LocalTrainConfig

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("pearl_verl", "recipes", "examples")
"""Where a method default could be copied. bench/ is left out: a benchmark pins the settings its numbers were
measured with, so that they do not move when a default does."""

SECTIONS = {**{f"pearl.{f.name}": f.default_factory for f in dataclasses.fields(PearlConfig)},
            "reward.reward_kwargs": JudgeConfig}

INDEPENDENT = {
    ("pearl_verl/verl_plugin/doctor.py", "pearl.student.timeout_s"): "how long doctor waits for verl's trainer to start",
    ("pearl_verl/verl_plugin/doctor.py", "reward.reward_kwargs.timeout_s"): "how long doctor waits for vLLM to start",
    ("pearl_verl/verl_plugin/cluster_checks.py", "pearl.student.timeout_s"): "the judge gate's calibration call",
    ("pearl_verl/verl_plugin/cluster_checks.py", "reward.reward_kwargs.top_k"):
        "the endpoint probe's top_k: any value shows the server takes the field",
    ("pearl_verl/sft/gen_cli.py", "reward.reward_kwargs.timeout_s"): "the teacher's timeout in gen-sft",
    ("pearl_verl/eval/annotate.py", "reward.reward_kwargs.max_tokens"): "the annotator's reply cap",
    ("pearl_verl/eval/annotate.py", "reward.reward_kwargs.parse_retries"): "the annotator's parse retries",
    ("pearl_verl/eval/rm.py", "reward.reward_kwargs.parse_retries"): "a reward model's parse retries in eval-rm",
    ("pearl_verl/eval/protocol.py", "pearl.student.temperature"): "the evaluated tutor's sampling (paper: 1.0)",
    ("pearl_verl/eval/protocol.py", "pearl.student.top_p"): "the evaluated tutor's sampling (paper: 1.0)",
    ("pearl_verl/eval/protocol.py", "reward.reward_kwargs.top_p"): "the evaluated tutor's sampling (paper: 1.0)",
    ("pearl_verl/eval/protocol.py", "pearl.student.top_k"): "the evaluated tutor's sampling (paper: 50)",
    ("pearl_verl/student/simulate_cli.py", "pearl.student.top_k"): "the tutor's top-k in simulate (paper: 50)",
    ("pearl_verl/train_local/local_config.py", "reward.reward_kwargs.top_k"): "the tutor's top-k in train-local",
    ("pearl_verl/models/hf_generate.py", "pearl.student.temperature"): "vLLM's default for a request that names none",
    ("pearl_verl/models/hf_generate.py", "pearl.student.top_p"): "vLLM's default for a request that names none",
    ("pearl_verl/models/hf_generate.py", "reward.reward_kwargs.top_p"): "vLLM's default for a request that names none",
}
"""(file, setting) pairs where the same name and number is another setting; each says whose it is."""


def _numbers(value: object) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return []
    return [repr(value), *([str(int(value))] if isinstance(value, float) and value == int(value) else [])]


def _defaults() -> list[tuple[str, str, object, type]]:
    out = []
    for section, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING and _numbers(f.default):
                out.append((section, f.name, f.default, cls))
    return out


@functools.cache
def _sources() -> dict[str, list[str]]:
    paths = sorted(p for d in SCANNED for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".sh"))
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8").splitlines() for p in paths}


def _text_copies(section: str, name: str, value: object) -> list[tuple[str, int, str]]:
    """``(file, line, text)`` wherever a Python or bash line sets a key ending in ``name`` to ``value``:
    ``name: int = 15``, ``name=15``, ``"name": 15``, ``PEARL_NAME:=15``, ``+section.name=15``. A key under
    another dotted section (``actor_rollout_ref.rollout.top_k=50``) is another setting."""
    found = []
    for number in _numbers(value):
        pattern = re.compile(
            rf"(?i)([\w.]*?)\b\w*{re.escape(name)}\b['\"]?[^\n=,(]{{0,25}}?(?::=|=|:)\s*{re.escape(number)}(?![\w.])"
        )
        for path, lines in _sources().items():
            for number_line, line in enumerate(lines, 1):
                if name not in line.lower() or number not in line:  # the regex only where it can match
                    continue
                for match in pattern.finditer(line):
                    prefix = match.group(1)
                    if not prefix or prefix.lstrip("+").endswith(f"{section}."):
                        found.append((path, number_line, match.group(0)))
    return found


@pytest.mark.parametrize(("section", "name", "value", "cls"), _defaults(), ids=lambda v: str(v)[:40])
def test_a_method_default_is_written_once(section, name, value, cls):
    copies = [(f, line, text) for f, line, text in _text_copies(section, name, value)
              if (f, f"{section}.{name}") not in INDEPENDENT]
    assert len(copies) <= 1, (
        f"{section}.{name} = {value!r} is written {len(copies)} times: {copies}. Keep the one its section "
        f"({cls.__name__}) takes, and let the others read it from there or leave the setting to it."
    )


def test_each_independent_setting_is_still_there():
    # An entry whose line went away would hide the next copy of that setting in the same file.
    defaults = {f"{section}.{name}": value for section, name, value, _ in _defaults()}
    for (path, key), why in INDEPENDENT.items():
        section, name = key.rsplit(".", 1)
        assert any(f == path for f, _, _ in _text_copies(section, name, defaults[key])), (path, key, why)


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for d in SCANNED for p in (ROOT / d).rglob("*.yaml")))
def test_no_yaml_file_sets_a_method_default(path):
    # PEARL's configs on verl's ppo_trainer are global packages: a key's path in the file is its path in the run.
    written = OmegaConf.to_container(OmegaConf.load(ROOT / path), resolve=False)
    for section, cls in SECTIONS.items():
        node = written
        for part in section.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        for key, value in (node or {}).items():
            field = cls.__dataclass_fields__.get(key)
            assert field is None or value != field.default, f"{path} sets {section}.{key} to its default {value!r}"


def test_the_places_that_read_a_method_setting_start_from_its_default():
    assert AgentConfig().max_tutor_turns == EpisodeLimits().max_tutor_turns == RecipeSettings().max_tutor_turns
    assert RecipeSettings().max_tokens_per_turn == AgentConfig().max_tokens_per_turn
    assert RecipeSettings().judge_samples == JudgeConfig.samples == LLMJudge(backend=None).samples
    assert LocalTrainConfig.gamma == PearlConfig().advantage.gamma
    judge = JudgeConfig(backend="offline")
    assert (judge.temperature, judge.top_k, judge.max_tokens) == (
        PAPER_JUDGE_SAMPLING.temperature, PAPER_JUDGE_SAMPLING.top_k, PAPER_JUDGE_SAMPLING.max_tokens)
    assert (LLMJudge(backend=None).aggregate, LLMJudge(backend=None).parse_retries) == (
        judge.aggregate, judge.parse_retries)


def test_the_readmes_table_of_estimator_settings_states_the_defaults():
    rows = re.findall(r"^\| `pearl\.advantage\.(\w+)` \| `([^`]+)` \|", (ROOT / "README.md").read_text(), re.M)
    assert len(rows) >= 4
    config = PearlConfig().advantage
    for name, shown in rows:
        value = getattr(config, name)
        if isinstance(value, float):
            assert float(shown) == value, (name, shown)
        else:
            assert shown.lower() == str(value).lower(), (name, shown)
