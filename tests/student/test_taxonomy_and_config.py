"""The behaviour taxonomy constants and StudentConfig validation."""

import pytest

from pearl_verl.dialogue.student_contract import ATTEMPT_OUTCOMES
from pearl_verl.strict_dataclass import build_dataclass
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.student.taxonomy import (
    ATTEMPT_DEFINITIONS,
    BEHAVIOUR_DEFINITIONS,
    BEHAVIOUR_TITLES,
    BEHAVIOURS,
    ordered_labels,
    taxonomy_table,
)


def test_taxonomy_covers_the_papers_labels():
    assert len(BEHAVIOURS) == 13 and set(BEHAVIOUR_TITLES) == set(BEHAVIOURS) == set(BEHAVIOUR_DEFINITIONS)
    paper_rows = [
        "Misconception",
        "Uncertainty / confusion",
        "Clarification / help-seeking",
        "Self-correction",
        "Persistence / retry",
        "Feedback uptake",
        "Metacognitive monitoring",
        "Positive engagement",
        "Frustration / disengagement",
        "Off-topic / inattention",
    ]
    assert list(BEHAVIOUR_TITLES.values())[:10] == paper_rows
    assert tuple(ATTEMPT_DEFINITIONS) == ATTEMPT_OUTCOMES == ("correct", "partial", "incorrect", "none")
    assert all(f"- {label}:" in taxonomy_table() for label in BEHAVIOURS)


def test_ordered_labels():
    assert ordered_labels(["off_topic", "misconception", "off_topic"]) == ("misconception", "off_topic")
    with pytest.raises(ValueError, match=r"Unknown behaviour label\(s\) \['boredom'\]"):
        ordered_labels(["boredom"])


def test_config_defaults_follow_the_paper():
    config = StudentConfig()
    sampling = config.sampling()
    assert (sampling.temperature, sampling.top_p, sampling.top_k) == (1.0, 1.0, 50)
    assert config.backend == "offline" and config.decomposer_kind == "rules" and not config.needs_endpoint
    llm = StudentConfig(backend="llm", base_url="http://h:8000/v1", model="qwen", api_key_env=None, max_retries=5)
    assert llm.decomposer_kind == "llm" and llm.endpoint().max_retries == 5 and llm.endpoint().model == "qwen"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"backend": "gpu"}, r"backend='gpu' must be one of \['offline', 'llm'\]"),
        ({"simulator": "eliza"}, "simulator='eliza'"),
        ({"backend": "llm"}, "need an endpoint, but base_url=None"),
        ({"simulator": "mathdial"}, "need an endpoint"),
        ({"decomposer": "llm"}, "need an endpoint"),
        ({"parse_attempts": 0}, "parse_attempts=0: a whole number from 1 to 1,000,000,000 \\(1: no retry"),
        ({"temperature": -1.0}, "temperature=-1.0"),
        ({"backend": "llm", "base_url": "host:8000", "model": "m"}, "must start with http"),
        ({"on_parse_failure": "ignore"}, "on_parse_failure='ignore'"),
    ],
)
def test_config_errors_name_value_and_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StudentConfig(**kwargs)


def test_config_loads_as_a_pearl_section():
    config = build_dataclass(StudentConfig, {"backend": "offline", "refine": False, "top_k": 20}, "pearl.student")
    assert config.refine is False and config.sampling().top_k == 20
    with pytest.raises(ValueError, match="Did you mean pearl.student.refine"):
        build_dataclass(StudentConfig, {"refin": True}, "pearl.student")
