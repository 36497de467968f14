"""Shared fixtures of the student tests: real GSM8K and MATH-500 problems from the data folder."""

import pytest

from pearl_verl.data import location
from pearl_verl.data.problem_files import load_problems

DATA = location.data_dir()


@pytest.fixture(scope="session")
def data_dir():
    return DATA


@pytest.fixture(scope="session")
def gsm8k_items():
    return load_problems(DATA / "gsm8k" / "test.jsonl", 250)


@pytest.fixture(scope="session")
def math_items():
    return load_problems(DATA / "math500" / "test.jsonl", 250)
