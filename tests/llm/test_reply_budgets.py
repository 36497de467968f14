"""Every role's default max_tokens holds the longest valid reply measured for it, with room to spare.

The replies are ``bench/reply_lengths.py``'s (BENCHMARKS.md, "Reply lengths per role"): MathDial's
people and LLM students, and the structured replies a model that follows the format writes, counted
with SmolLM2's tokenizer (it splits digits one by one, as Qwen's does). A reply cut at its cap is a
parse failure for the structured roles and a truncated message for the others, so a default
lowered below these, or a format grown past its default, fails here.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import reply_lengths  # noqa: E402

MARGIN = 1.2
COVERED_BY = {  # measured replies -> the default that must hold them
    "tutor (MathDial teachers, people)": ("teacher (gen-sft)", "tutor (eval-tutor)"),
    "student (MathDial students, an LLM)": ("student message",),
    "student planner (offline plans)": ("student planner",),
    "extraction (rule decompositions)": ("extraction",),
    "judge (offline judge's rationales)": ("judge",),
    "judge (two-sentence rationales)": ("judge",),
    "annotator (offline dialogues)": ("annotator",),
}


@pytest.fixture(scope="module")
def longest():
    try:
        tokenizer = reply_lengths.load_tokenizer()
    except SystemExit as missing:  # a BaseException would break pytest's fixture cache; fail plainly
        pytest.fail(str(missing))
    texts = {**reply_lengths.mathdial_messages(), **reply_lengths.structured_replies(problems=12)}
    return {role: max(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in values)
            for role, values in texts.items()}


def test_each_default_holds_the_longest_valid_reply_with_a_margin(longest):
    defaults = reply_lengths.defaults()
    assert set(COVERED_BY) == set(longest) and {d for ds in COVERED_BY.values() for d in ds} == set(defaults)
    short = {(role, name): (longest[role], defaults[name]) for role, names in COVERED_BY.items() for name in names
             if defaults[name] < MARGIN * longest[role]}
    assert not short, f"default max_tokens below {MARGIN}x the longest valid reply: {short}"


def test_the_measured_replies_are_the_real_ones(longest):
    # The measurement itself: MathDial's 3,329 student turns reach 210 tokens, MATH500's longest
    # solution needs a 526-token extraction (the old 512 cut it), a judgement with two-sentence
    # rationales is over 1,000 tokens. A silently empty source would make the check above vacuous.
    assert 150 < longest["student (MathDial students, an LLM)"] < 256
    assert longest["extraction (rule decompositions)"] > 512
    assert longest["judge (two-sentence rationales)"] > 1000 > longest["student planner (offline plans)"]
