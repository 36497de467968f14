"""The judge's and the student's endpoint keys are one declaration with one validation."""

import dataclasses

import pytest

from pearl_verl.judge.judge_config import JudgeConfig
from pearl_verl.llm.chat_types import EndpointConfig, SamplingConfig
from pearl_verl.llm.settings import EndpointSettings
from pearl_verl.student.student_config import StudentConfig

ROLES = [
    pytest.param(JudgeConfig, {"backend": "llm"}, id="judge"),
    pytest.param(StudentConfig, {"backend": "llm"}, id="student"),
]
SHARED = {f.name for f in dataclasses.fields(EndpointSettings)}


@pytest.mark.parametrize(("cls", "llm"), ROLES)
def test_every_role_takes_the_same_endpoint_keys_to_the_client(cls, llm):
    assert SHARED <= {f.name for f in dataclasses.fields(cls)}
    config = cls(**llm, base_url="https://h:8000/v1", model="m", api_key_env="KEY", timeout_s=7.5, max_retries=1,
                 max_concurrency=5, structured_output="json_object", temperature=0.7, top_p=0.9, top_k=3, max_tokens=99)
    assert config.endpoint() == EndpointConfig(
        base_url="https://h:8000/v1", model="m", api_key_env="KEY", timeout_s=7.5, max_retries=1, max_concurrency=5,
        structured_output="json_object",
    )
    sampling = config.sampling()
    assert (sampling.temperature, sampling.top_p, sampling.top_k, sampling.max_tokens) == (0.7, 0.9, 3, 99)


@pytest.mark.parametrize(("cls", "llm"), ROLES)
@pytest.mark.parametrize(("values", "message"), [
    ({"api_key_env": "sk-abc def"}, "must be the NAME of an environment variable"),
    ({"api_key_env": "KEY=sk-1"}, "must be the NAME of an environment variable"),
    ({"timeout_s": 0.0}, r"timeout_s=0.0: a finite number greater than 0"),
    ({"max_concurrency": 0}, r"max_concurrency=0: a whole number from 1 to"),
    ({"structured_output": "grammar"}, "structured_output='grammar' must be one of"),
    ({"top_p": 0.0}, r"top_p=0.0: a finite number greater than 0 and at most 1$"),
])
def test_every_role_rejects_a_bad_endpoint_value_with_the_same_message(cls, llm, values, message):
    with pytest.raises(ValueError, match=message):
        cls(**llm, base_url="http://h/v1", model="m", **values)


def test_a_key_in_api_key_env_is_refused_even_where_no_endpoint_is_used():
    # the offline student used to take it silently; a key in a config file is a leak either way
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        StudentConfig(backend="offline", api_key_env="sk-live key")
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        EndpointConfig(base_url="http://h/v1", model="m", api_key_env="")


def test_roles_keep_their_own_defaults():
    judge, student = JudgeConfig(backend="offline"), StudentConfig()
    assert (judge.timeout_s, judge.max_concurrency, judge.temperature, judge.top_k) == (300.0, 32, 0.3, 20)
    assert (student.timeout_s, student.max_concurrency, student.temperature, student.top_k) == (120.0, 64, 1.0, 50)
    assert judge.sampling().max_tokens == 4096 and student.sampling().max_tokens == 256
    assert student.sampling("planner").max_tokens == 128 and student.sampling("planner").response_schema


NUMBER_TYPES = ("int", "float", "int | None", "float | None")


@pytest.mark.parametrize("cls", [EndpointConfig, SamplingConfig, EndpointSettings, JudgeConfig, StudentConfig])
def test_every_number_key_declares_its_range_once(cls):
    numbers = {f.name for f in dataclasses.fields(cls) if f.type in NUMBER_TYPES}
    assert numbers == set(cls.RANGES)


@pytest.mark.parametrize(("cls", "llm"), ROLES)
@pytest.mark.parametrize(("key", "value"), [
    ("timeout_s", float("nan")), ("timeout_s", float("inf")), ("max_retries", -1), ("max_retries", True),
    ("temperature", float("nan")), ("top_k", 0), ("max_tokens", 2.5), ("max_concurrency", "8"),
])
def test_a_value_out_of_its_range_is_refused_naming_the_key_under_the_section(cls, llm, key, value):
    with pytest.raises(ValueError, match=rf"^{cls.SECTION}\.{key}=\S+: a (whole|finite) number"):
        cls(**llm, base_url="http://h/v1", model="m", **{key: value})


@pytest.mark.parametrize(("cls", "key", "value", "allowed"), [
    (JudgeConfig, "samples", 0, r"from 1 to 1,000,000,000 \(1 turns self-consistency off\)"),
    (JudgeConfig, "parse_retries", -1, "from 0 to"),
    (JudgeConfig, "seed", -3, "from 0 to"),
    (StudentConfig, "max_message_chars", 19, "from 20 to"),
    (StudentConfig, "planner_max_tokens", 0, "from 1 to"),
])
def test_a_role_s_own_number_keys_are_checked_by_their_declared_range(cls, key, value, allowed):
    with pytest.raises(ValueError, match=rf"{key}={value}: a whole number {allowed}"):
        cls(backend="offline", **{key: value})


@pytest.mark.parametrize(("name", "says"), [
    ("JUDGE KEY", "has a space in it, so it is no environment variable's name"),
    ("Bearer abc", "looks like an API key"),
    ("KEY=abc", "looks like an API key"),
    ("sk-proj-" + "a1B2" * 8, "looks like an API key"),
])
def test_an_api_key_env_that_is_no_name_is_told_apart_from_a_pasted_key(name, says):
    with pytest.raises(ValueError, match=says) as refused:
        StudentConfig(api_key_env=name)
    assert name not in str(refused.value)
