"""Offline stand-ins for hub models: a ChatML tokenizer trained locally and tiny random Qwen3 models.

No model hub is reachable on CPU test machines. These build in about a second, save with
``save_pretrained`` and load anywhere a model path is expected (verl's ``model.path`` included).
The tokenizer follows Qwen's ChatML conventions (``<|im_start|>``, ``<|im_end|>``, ``"\\n"`` as one
token) so verl's Qwen continuous-token builder applies to it unchanged. They are for tests and CPU
runs only: random weights teach nothing about tutoring.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3MoeConfig

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Enough tutoring-dialogue text for a byte-level BPE to learn useful merges; every byte is in the
# base alphabet, so any text still tokenizes.
_CORPUS = [
    "Let's work through this together. What is the problem asking you to find?",
    "Good thinking! Can you explain how you got that number? Try the next step.",
    "I think the answer is 12 because 3 times 4 is 12. Is that right?",
    "I'm not sure how to start. Could you give me a hint about the first step?",
    "Let's check that step again. What do you get when you add the two amounts?",
    "Great job, that's correct! Let's recap the key idea before we finish.",
    "The store sold 48 apples in April and half as many in May. How many in total?",
    "So 48 / 2 = 24, and 48 + 24 = 72 apples altogether.",
    "What fraction of the pizza is left? 1/2, 3/4, 5/8, 0.25, 100%, $15.50",
    "Hmm, I got 15. Wait, I think I made a mistake. Let me try again.",
    "You're doing great. Mistakes are how we learn. What could you try differently?",
    "Can you solve 2x + 3 = 11 for x? First subtract 3 from both sides.",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 25 30 40 50 60 70 80 90 100 1000",
    "+ - * / = ( ) . , ? ! : ; ' \" % $",
]


def tutoring_corpus() -> list[str]:
    """What the local runs' tutors and students write: the scripted teachers' and the offline student's
    phrases, the tutor instruction and the shipped MathDial problems, weighted so that each of their
    words becomes one token.

    A tutor that writes whole-word tokens can only sample whole words: with the word pieces of a
    generic corpus ("Continue." was 7 tokens, "C on t in u e .") a tiny model sampling at temperature 1
    wrote broken words ("Cone!", "aretinultipl") in about half of its turns.
    """
    from pearl_verl.data.location import SHIPPED_MATHDIAL
    from pearl_verl.student.offline_realiser import META, OPENINGS, PHRASES, REASONS
    from pearl_verl.tutor.styles import TEACHER_LINES
    from pearl_verl.tutor.tutor_prompts import TUTOR_INSTRUCTION

    student = [*(p for group in (*PHRASES.values(), *META.values()) for p in group), *REASONS.values(),
               *(template.replace("{q}", "") for template, _ in OPENINGS)]
    problems = [json.loads(line)["question"] for line in SHIPPED_MATHDIAL.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    return [*_CORPUS, *TEACHER_LINES * 8, *student * 4, TUTOR_INSTRUCTION * 4, *problems]


def build_offline_tokenizer(out_dir: str | Path, vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on :func:`tutoring_corpus` with a ChatML chat template and save it
    to ``out_dir``. The end-of-session marker is one token, so a tutor ends a session in one choice.

    Returns:
        The tokenizer; ``out_dir`` then holds files ``AutoTokenizer.from_pretrained`` reads.
    """
    from tokenizers import AddedToken

    from pearl_verl.tutor.tutor_prompts import END_MARKER

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(tutoring_corpus(), trainer=trainer)
    tokenizer.add_tokens([AddedToken(END_MARKER, special=False, normalized=False)])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        additional_special_tokens=["<|im_start|>", "<|endoftext|>"],
    )
    fast.chat_template = CHATML_TEMPLATE
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)
    return fast


TINY_HEAD_DIM = 32
"""The tiny models' attention head size: 2 query heads and 1 key-value head of 32, the smallest size vLLM's CPU
attention takes (``VLLM_MIN_HEAD_DIM``, :mod:`pearl_verl.verl_plugin.cpu.parts`), so one model serves both rollouts.
``head_dim=16`` builds the 4 and 2 heads of 16 it had before, at the same cost (docs/training.md compares them)."""
TINY_Q_WIDTH, TINY_KV_WIDTH = 64, 32
"""The width of the query and of the key-value projections: whatever the head size, the same weights and cost, so
the two rollouts compare at equal model cost."""


def _heads(head_dim: int) -> dict:
    if TINY_KV_WIDTH % head_dim:
        raise ValueError(f"head_dim {head_dim} does not divide the key-value width {TINY_KV_WIDTH}")
    return {"num_attention_heads": TINY_Q_WIDTH // head_dim, "num_key_value_heads": TINY_KV_WIDTH // head_dim,
            "head_dim": head_dim}


def tiny_qwen3_moe_config(vocab_size: int, tokenizer: PreTrainedTokenizerFast, layers: int = 2,
                          head_dim: int = TINY_HEAD_DIM) -> Qwen3MoeConfig:
    """A 2-layer, 4-expert (top-2) Qwen3-MoE config: the paper's architecture family at toy size, with heads of
    :data:`TINY_HEAD_DIM` (its query and key-value widths fixed, so another head size keeps the cost)."""
    return Qwen3MoeConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        moe_intermediate_size=64,
        num_hidden_layers=layers,
        **_heads(head_dim),
        num_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )


def tiny_qwen3_config(vocab_size: int, tokenizer: PreTrainedTokenizerFast, layers: int = 2,
                      head_dim: int = TINY_HEAD_DIM) -> Qwen3Config:
    """A 2-layer dense Qwen3 config (a cheaper stand-in when MoE routing is not under test), heads as the MoE's."""
    return Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        **_heads(head_dim),
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )


def build_tiny_model(out_dir: str | Path, moe: bool = True, seed: int = 0, layers: int = 2,
                     head_dim: int = TINY_HEAD_DIM) -> Path:
    """Save an offline tokenizer and a tiny random Qwen3(-MoE) causal LM to ``out_dir``.

    Args:
        out_dir: destination; becomes a valid ``from_pretrained`` / verl ``model.path``.
        moe: Qwen3-MoE (default, as the paper's tutor) or dense Qwen3.
        seed: weight initialisation seed.
        layers: decoder layers (2: about 1 MB of float32 weights with MoE).
        head_dim: size of an attention head (32, the default, which vLLM takes: 2 query and 1 key-value heads;
            16: 4 and 2).

    Returns:
        ``out_dir`` as a Path.
    """
    import torch
    from transformers import AutoModelForCausalLM

    out = Path(out_dir)
    tokenizer = build_offline_tokenizer(out)
    vocab = len(tokenizer)
    config = (tiny_qwen3_moe_config if moe else tiny_qwen3_config)(vocab, tokenizer, layers=layers, head_dim=head_dim)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(out)
    (out / "generation_config.json").write_text(
        json.dumps({"eos_token_id": config.eos_token_id, "pad_token_id": config.pad_token_id})
    )
    return out
