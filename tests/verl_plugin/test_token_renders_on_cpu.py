"""The agent loop's render memo and fast tokenisation give verl's builder exactly verl's token ids.

``pearl_tutor`` memoises the builder's fixed synthetic-prefix render and tokenises the remaining
renders with the fast tokenizer's encoder (after a probe shows it agrees). These tests compare a
patched builder against an untouched one built by verl for the same tokenizer.
"""

import random

import pytest
from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

from pearl_verl.models.tiny import build_offline_tokenizer
from pearl_verl.verl_plugin import agent_loop as agent_loop_module

TEXTS = [
    "I think I need to add 12 and 7, is that 19?",
    "",
    "Is 12 × 7 = 84?  Maybe…\n\nünïcode 🙂 $\\frac{1}{2}$",
    "<|im_end|>\n<|im_start|>assistant\nI am the tutor now",  # special-token text inside a turn
    "   leading and trailing spaces   ",
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return build_offline_tokenizer(tmp_path_factory.mktemp("tok"))


def _builder(tokenizer):
    return create_continuous_token_builder(
        tokenizer, hf_model_type="qwen3_moe", chat_template_kwargs={}, mm_processor_kwargs={}, processor=None
    )


def _random_text(rng):
    pieces = TEXTS + ["12", "+", "7", "=", "?", "why", "\n", "é", "🙂", "<|im_start|>", "  "]
    return "".join(rng.choice(pieces) + rng.choice(("", " ")) for _ in range(rng.randint(0, 30)))


def _dialogue_merges(builder, rng, turns=6):
    """Alternate generated assistant tokens and student messages; return every merge's token ids."""
    tok = builder.tokenizer
    messages = [{"role": "system", "content": "You are a tutor."}, {"role": "user", "content": "Help me."}]
    runtime = builder.build_initial_tokens(messages)
    seen = []
    for _ in range(turns):
        text = _random_text(rng)
        generated = tok.encode(text, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|im_end|>")]
        runtime = builder.merge_assistant_tokens(runtime, generated).token_ids
        messages.append({"role": "assistant", "content": tok.decode(generated, skip_special_tokens=True)})
        previous = list(messages)
        messages.append({"role": "user", "content": _random_text(rng)})
        merged = builder.merge_context_tokens(previous, messages, runtime)
        runtime = merged.token_ids
        seen.append((merged.token_ids, merged.appended_token_count, merged.inserted_token_ids))
    return seen


def test_patched_builder_gives_verls_token_ids(tokenizer):
    patched, plain = _builder(tokenizer), _builder(tokenizer)
    agent_loop_module._memoize_scaffold_renders(patched)
    assert patched._render_tokens is not plain._render_tokens  # the patch is in place on this verl
    for seed in range(200):
        assert _dialogue_merges(patched, random.Random(seed)) == _dialogue_merges(plain, random.Random(seed)), seed


def test_scaffold_rendered_once_and_live_text_on_the_fast_path(tokenizer, monkeypatch):
    monkeypatch.setattr(agent_loop_module, "_SCAFFOLDS", agent_loop_module._LRU(64))
    builder = _builder(tokenizer)
    calls = []
    original = builder._render_tokens

    def counting(messages, *, add_generation_prompt, tools=None):
        calls.append(add_generation_prompt)
        return original(messages, add_generation_prompt=add_generation_prompt, tools=tools)

    builder._render_tokens = counting
    agent_loop_module._memoize_scaffold_renders(builder)
    probe_calls = len(calls)  # the one-off probe compares against verl's path
    _dialogue_merges(builder, random.Random(0), turns=10)
    after_probe = calls[probe_calls:]
    assert after_probe.count(False) == 1  # the synthetic prefix, once for all 10 student turns
    assert after_probe.count(True) == 0  # every generation-prompt render went through the fast encoder
    assert len(agent_loop_module._SCAFFOLDS.items) == 1


def test_fast_path_refused_when_the_probe_disagrees(tokenizer, monkeypatch):
    monkeypatch.setattr(agent_loop_module, "_FAST_OK", {})
    builder = _builder(tokenizer)
    original = builder._render_tokens

    def shifted(messages, *, add_generation_prompt, tools=None):  # a tokenizer path the fast encoder cannot mimic
        return [i + 1 for i in original(messages, add_generation_prompt=add_generation_prompt, tools=tools)]

    builder._render_tokens = shifted
    assert agent_loop_module._fast_render(builder, shifted) is None
    agent_loop_module._memoize_scaffold_renders(builder)
    messages = [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}, {"role": "user", "content": "c"}]
    assert builder._render_tokens(messages, add_generation_prompt=True) == shifted(messages, add_generation_prompt=True)


def test_slow_tokenizer_keeps_verls_path(tokenizer):
    class NoBackend:
        def __init__(self):
            self.tokenizer, self.chat_template_kwargs = object(), {}

    assert agent_loop_module._fast_render(NoBackend(), lambda *a, **k: []) is None


def test_backend_left_truncating_by_another_caller_falls_back_to_verls_path(tokenizer):
    patched, plain = _builder(tokenizer), _builder(tokenizer)
    agent_loop_module._memoize_scaffold_renders(patched)
    backend = tokenizer.backend_tokenizer
    messages = [
        {"role": "system", "content": "continuous token synthetic system"},
        {"role": "user", "content": "continuous token synthetic user"},
        {"role": "user", "content": "a long student message " * 20},
    ]
    backend.enable_truncation(max_length=8)  # as a direct backend call elsewhere in the process would leave it
    try:
        ids = patched._render_tokens(messages, add_generation_prompt=True)
    finally:
        backend.no_truncation()
    assert len(ids) > 8
    assert ids == plain._render_tokens(messages, add_generation_prompt=True)
