"""Tutor specs, a tutor's own instruction, and local HF models as tutor (HF generate on CPU)."""

import json

import pytest

from pearl_verl.dialogue.episode import DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.eval.tutors import InstructedChatTutor, build_tutor, parse_tutor_spec
from pearl_verl.llm.chat_types import SamplingConfig
from pearl_verl.llm.scripted import ScriptedChatBackend
from pearl_verl.tutor.policy import ChatTutor
from pearl_verl.tutor.tutor_prompts import TUTOR_INSTRUCTION

PROBLEM = Problem("p", "What is 3 * 4?", "3 * 4 = 12", "12", "gsm8k")


def test_specs_parse_and_validate(tmp_path):
    spec = parse_tutor_spec("name=pearl,base_url=http://h:8000/v1,model=pearl-30b,api_key_env=KEY,reference=false")
    assert (spec.kind, spec.model, spec.reference) == ("endpoint", "pearl-30b", False)
    assert "KEY" not in json.dumps(spec.describe())
    with pytest.raises(ValueError, match="unknown key"):
        parse_tutor_spec("name=a,url=http://x")
    with pytest.raises(ValueError, match="exactly one of"):
        parse_tutor_spec("name=a,scripted=socratic,hf=/m")
    with pytest.raises(ValueError, match="no model"):
        parse_tutor_spec("name=a,base_url=http://h/v1")
    with pytest.raises(ValueError, match="name="):
        parse_tutor_spec("scripted=socratic")
    with pytest.raises(ValueError, match="must be non-empty"):
        parse_tutor_spec("name=a|b,scripted=socratic")


async def test_protocol_sampling_reaches_every_endpoint_tutor(tmp_path):
    sampling = SamplingConfig(temperature=1.0, top_p=1.0, top_k=50, max_tokens=8192)
    tutor = build_tutor(parse_tutor_spec("name=e,base_url=http://127.0.0.1:9/v1,model=m"), sampling)
    assert isinstance(tutor, ChatTutor) and tutor.sampling == sampling


async def test_an_instruction_file_replaces_only_the_socratic_instruction(tmp_path):
    backend = ScriptedChatBackend(lambda messages, sampling: "Hello")
    tutor = InstructedChatTutor(backend, "You are MuduoTutor.", SamplingConfig(), include_reference=True)
    await tutor.reply(PROBLEM, (DialogueTurn("student", "Help?"),))
    system = backend.calls[0][0][0]["content"]
    assert system.startswith("You are MuduoTutor.\n\nProblem:\nWhat is 3 * 4?")
    assert TUTOR_INSTRUCTION not in system and "Reference solution" in system


async def test_hf_chat_backend_generates_locally(tiny_chat_model):
    from pearl_verl.eval.hf_backend import HFChatBackend

    backend = HFChatBackend(tiny_chat_model, SamplingConfig(temperature=1.0, top_k=50, max_tokens=6), seed=1)
    result = await backend.chat([{"role": "user", "content": "What is 3 times 4?"}])
    again = await HFChatBackend(tiny_chat_model, SamplingConfig(temperature=1.0, top_k=50, max_tokens=6), seed=1).chat(
        [{"role": "user", "content": "What is 3 times 4?"}]
    )
    assert isinstance(result.text, str) and result.completion_tokens <= 6
    assert result.text == again.text  # seeded: reproducible
    assert result.finish_reasons == ("length",)  # a random model writes to the cap, as a server reports it
    assert backend.usage.calls == 1
    with pytest.raises(ValueError, match="no config.json"):
        HFChatBackend(tiny_chat_model / "missing")


def test_a_local_model_runs_on_the_gpu_when_torch_sees_one(monkeypatch):
    import torch

    from pearl_verl.eval.hf_backend import default_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert default_device() == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert default_device() == "cuda"


def test_eval_tutor_with_a_local_hf_tutor(fx, tmp_path, run_cli, tiny_chat_model):
    assert (
        run_cli(
            "eval-tutor",
            fx.GSM8K,
            "--limit",
            "1",
            "--tutor",
            f"name=tiny,hf={tiny_chat_model}",
            "--judge",
            "offline",
            "--max-turns",
            "2",
            "--max-tokens",
            "8",
            "--out",
            tmp_path,
        )
        == 0
    )
    row = fx.read_jsonl(tmp_path / "results.jsonl")[0]
    tutor_turns = sum(t["role"] == "tutor" for t in row["episode"]["turns"])
    assert row["tutor_cut_replies"] == tutor_turns > 0  # 8 tokens of a random model: every message cut
    assert row["tutor"] == "tiny" and row["episode"]["end_reason"] in (
        "turn_limit",
        "tutor_ended",
        "student_concluded",
        "student_left",
    )
    assert row["judge"]["judge_ok"] == 1
