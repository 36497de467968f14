"""Shared fixtures of the evaluation tests: fixture paths, the eval CLI, local servers and tiny models."""

import json
import re
from pathlib import Path

import pytest

from pearl_verl.data.location import data_dir
from pearl_verl.eval.__main__ import main as eval_main
from pearl_verl.tutor.tutor_prompts import END_MARKER

ROOT = Path(__file__).resolve().parents[2]
GSM8K_FIXTURE = ROOT / "pearl_verl" / "resources" / "data" / "gsm8k" / "test_first50.jsonl"
MATHDIAL_FIXTURE = ROOT / "pearl_verl" / "resources" / "data" / "mathdial" / "test_first20.jsonl"
MTB_FIXTURE = ROOT / "pearl_verl" / "resources" / "eval" / "mtb"
PAIRS_FIXTURE = ROOT / "pearl_verl" / "resources" / "eval" / "pairs" / "synthetic_pairs.jsonl"
DATA = data_dir()


@pytest.fixture
def run_cli():
    """Run ``python -m pearl_verl.eval`` in-process; returns its exit code."""
    return lambda *argv: eval_main([str(a) for a in argv])


def role_play_student(body):
    """A baseline student endpoint: answers the tutor with the reference's numbers after two turns."""
    tutor_turns = sum(m["role"] == "user" for m in body["messages"])
    return "I think the answer is 18." if tutor_turns >= 3 else "Hmm, I am not sure. Is it 3 times 4?"


def endpoint_tutor(body):
    """A tutor endpoint: asks two questions, then ends the session."""
    asked = sum(m["role"] == "assistant" for m in body["messages"])
    if asked >= 2:
        return f"Great work, you checked each step. {END_MARKER}"
    return "What is the first quantity the problem gives you?"


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def markdown_rows(markdown, first_header):
    """The data rows (lists of cells) of the Markdown table whose header starts with ``first_header``."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return lines[start], rows


def parse_cell(text):
    """``mean ± half`` -> (mean, half); ``mean`` -> (mean, None)."""
    match = re.fullmatch(r"(-?[\d.]+)(?: ± ([\d.]+))?", text.replace("+", "", 1) if text.startswith("+") else text)
    assert match, text
    return float(match.group(1)), (float(match.group(2)) if match.group(2) else None)


@pytest.fixture(scope="session")
def tiny_chat_model(tmp_path_factory):
    from pearl_verl.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-chat"), moe=False, seed=0)


@pytest.fixture(scope="session")
def tiny_reward_model(tmp_path_factory):
    """A random Qwen3 sequence-classification model with one label (the shape of a pedagogical RM)."""
    import torch
    from transformers import Qwen3ForSequenceClassification

    from pearl_verl.models.tiny import build_offline_tokenizer, tiny_qwen3_config

    out = tmp_path_factory.mktemp("tiny-rm")
    tokenizer = build_offline_tokenizer(out)
    config = tiny_qwen3_config(len(tokenizer), tokenizer)
    config.num_labels = 1
    torch.manual_seed(0)
    Qwen3ForSequenceClassification(config).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def fx():
    """Paths and helpers for the tests (pytest's importlib mode cannot import conftest by name)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        GSM8K=GSM8K_FIXTURE,
        MATHDIAL=MATHDIAL_FIXTURE,
        MTB=MTB_FIXTURE,
        PAIRS=PAIRS_FIXTURE,
        DATA=DATA,
        markdown_rows=markdown_rows,
        parse_cell=parse_cell,
        read_jsonl=read_jsonl,
        role_play_student=role_play_student,
        endpoint_tutor=endpoint_tutor,
    )
