"""Evaluated tutors from command-line specs: endpoints, local HF models, or scripted test doubles.

A spec is ``key=value`` pairs separated by commas; ``name`` labels the tutor in every table::

    name=pearl,base_url=http://tutor:8000/v1,model=pearl-30b          # an OpenAI-compatible endpoint
    name=gpt,base_url=https://api.example/v1,model=gpt-x,api_key_env=OPENAI_API_KEY
    name=small,hf=/models/Qwen3-0.6B                                   # a local HF model (HF generate)
    name=muduo,base_url=...,model=...,instruction=muduo_prompt.txt     # its own recommended system prompt
    name=socratic,scripted=socratic                                    # test doubles: socratic | leaking

Every tutor is sampled with the protocol's settings (the fair-comparison rule): the spec cannot
change temperature, top-p, top-k or the token cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pearl_verl.dialogue.episode import DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.tutor_contract import TutorPolicy
from pearl_verl.errors import InputError
from pearl_verl.jsonl import read_text
from pearl_verl.llm.chat_types import ChatBackend, EndpointConfig, Message, SamplingConfig, check_api_key_env
from pearl_verl.llm.cli_flags import check_spec_keys
from pearl_verl.tutor.policy import ChatTutor
from pearl_verl.tutor.tutor_prompts import TUTOR_INSTRUCTION, tutor_messages

SCRIPTED: tuple[str, ...] = ("socratic", "leaking")
_KEYS = frozenset({"name", "base_url", "model", "api_key_env", "hf", "scripted", "instruction", "reference", "timeout"})
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+")


@dataclass(frozen=True)
class TutorSpec:
    """One evaluated tutor.

    Attributes:
        name: its label in results and tables (letters, digits, ``-_.+``).
        base_url: an OpenAI-compatible endpoint (with ``model``).
        model: the served model name.
        api_key_env: NAME of the environment variable holding the endpoint's key.
        hf: a local Hugging Face model directory, generated with HF ``generate``.
        scripted: ``socratic`` or ``leaking``: deterministic test doubles, never a real tutor.
        instruction: a file whose text replaces the Socratic instruction (tutoring-specific systems
            with their own recommended prompt); the problem and reference still follow it.
        reference: show the reference solution to the tutor (default true).
        timeout: seconds per HTTP attempt (endpoints).
    """

    name: str
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    hf: str | None = None
    scripted: str | None = None
    instruction: str | None = None
    reference: bool = True
    timeout: float = 600.0

    def __post_init__(self) -> None:
        check_api_key_env(self.api_key_env, "tutor api_key_env")  # first: later messages repeat values
        if not self.name or not set(self.name) <= _NAME_CHARS or "|" in self.name:
            raise InputError(
                f"tutor name={self.name!r} must be non-empty letters, digits or '-_.+' (it labels tables)."
            )
        kinds = [k for k in ("base_url", "hf", "scripted") if getattr(self, k)]
        if len(kinds) != 1:
            raise InputError(
                f"tutor {self.name!r} must set exactly one of base_url (+model), hf or scripted; got {kinds or 'none'}. "
                "E.g. name=pearl,base_url=http://host:8000/v1,model=pearl-30b"
            )
        if self.base_url and not self.model:
            raise InputError(f"tutor {self.name!r} has base_url but no model=<served model name>.")
        if self.scripted and self.scripted not in SCRIPTED:
            raise InputError(f"tutor {self.name!r}: scripted={self.scripted!r} must be one of {list(SCRIPTED)}.")
        if self.instruction and not Path(self.instruction).is_file():
            raise InputError(f"tutor {self.name!r}: instruction file {self.instruction!r} does not exist.")

    @property
    def kind(self) -> str:
        """``endpoint``, ``hf`` or ``scripted``."""
        return "endpoint" if self.base_url else "hf" if self.hf else "scripted"

    def describe(self) -> dict[str, str | bool | None]:
        """What the results manifest records about this tutor (never a key)."""
        return {
            "kind": self.kind,
            "base_url": self.base_url,
            "model": self.model,
            "hf": self.hf,
            "scripted": self.scripted,
            "instruction": self.instruction,
            "reference": self.reference,
        }


def parse_tutor_spec(text: str) -> TutorSpec:
    """A :class:`TutorSpec` from ``key=value,key=value``.

    Raises:
        InputError: for a malformed pair or an unknown key (the valid keys are listed).
    """
    check_spec_keys(text)
    values: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise InputError(f"tutor spec {text!r}: {part!r} is not key=value.")
        values[key.strip()] = value.strip()
    unknown = set(values) - _KEYS
    if unknown:
        raise InputError(f"tutor spec {text!r} has unknown key(s) {sorted(unknown)}; valid keys: {sorted(_KEYS)}.")
    if "name" not in values:
        raise InputError(f"tutor spec {text!r} needs name=<label>.")
    reference = values.pop("reference", "true").lower() not in ("0", "false", "no")
    timeout = float(values.pop("timeout", "600"))
    return TutorSpec(**values, reference=reference, timeout=timeout)


class InstructedChatTutor(ChatTutor):
    """A :class:`ChatTutor` whose system message starts with its own instruction instead of ours."""

    def __init__(self, backend: ChatBackend, instruction: str, sampling: SamplingConfig, include_reference: bool):
        super().__init__(backend, sampling, include_reference)
        self.instruction = instruction

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        messages: list[Message] = tutor_messages(problem, turns, self.include_reference)
        system = messages[0]["content"]
        # Keep what follows our instruction (the problem, the reference); swap the instruction itself.
        rest = system[len(TUTOR_INSTRUCTION) :] if system.startswith(TUTOR_INSTRUCTION) else "\n\n" + system
        messages[0] = {"role": "system", "content": self.instruction.strip() + "\n\n" + rest.lstrip("\n")}
        result = await self.backend.chat(messages, self.sampling)
        return result.text


def build_tutor(spec: TutorSpec, sampling: SamplingConfig, concurrency: int = 64, seed: int = 0) -> TutorPolicy:
    """The tutor policy ``spec`` describes, sampled with the protocol's ``sampling``."""
    if spec.scripted:
        from pearl_verl.tutor.scripted import ScriptedLeakingTutor, ScriptedSocraticTutor

        return ScriptedSocraticTutor() if spec.scripted == "socratic" else ScriptedLeakingTutor()
    backend: ChatBackend
    if spec.hf:
        from pearl_verl.eval.hf_backend import HFChatBackend

        backend = HFChatBackend(spec.hf, sampling, seed=seed)
    else:
        from pearl_verl.llm.client import OpenAIChatClient

        endpoint = EndpointConfig(
            str(spec.base_url),
            str(spec.model),
            api_key_env=spec.api_key_env,
            timeout_s=spec.timeout,
            max_concurrency=concurrency,
        )
        backend = OpenAIChatClient(endpoint, sampling, seed=seed)
    if spec.instruction:
        text = read_text(spec.instruction, "tutor instruction file")
        return InstructedChatTutor(backend, text, sampling, spec.reference)
    return ChatTutor(backend, sampling, spec.reference)
