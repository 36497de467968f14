"""What counts as language (pearl_verl.dialogue.legible): words, not letter soup around cue words."""

import pytest

from pearl_verl.dialogue.legible import context_words, is_language, legibility, unfinished, well_formed


@pytest.mark.parametrize("text", [
    "What is the problem asking you to find?",
    "Let's check that together. How did you get 8?",
    "Great job! 48 / 2 = 24, so she sold 24 clips in May.",
    "Natalia's clips didn't fit; the students' work is right.",
    "Let X be the original price. Then X - X*25% = $19.50.",
    "Correct!",
])
def test_sentences_are_language(text):
    assert is_language(text)


@pytest.mark.parametrize("text", [
    "Cone! Let's check that together\ufffde! Let's check that understands aretinultipl",
    "xkq fhe Let's check that together? bzt qwo plm",
    "?",
    "42",
    "ing ion re ght qe",
    "",
])
def test_junk_and_text_without_words_are_not(text):
    assert not is_language(text)


def test_names_and_units_of_the_context_count_as_words():
    text = "How many eggs does Quetzalli sell?"
    assert not is_language(text)
    assert is_language(text, context_words(["Quetzalli's ducks lay 16 eggs per day."]))


def test_the_share_counts_words_against_non_words_and_ignores_numbers_and_signs():
    counted = legibility("Good 3 + 4 = 7 zzqx!")
    assert (counted.words, counted.other) == (1, 1) and counted.share == 0.5


@pytest.mark.parametrize("text", [
    "Let's check that together. How did you get that number?",
    "Continue.",
    "Well done! 48 / 2 = 24.",
    'She said "try again."',
])
def test_complete_sentences_of_words_are_well_formed(text):
    assert well_formed(text)


@pytest.mark.parametrize("text", [
    "Let's check that together. How did you",  # cut at the token cap, mid-sentence
    "Let's check that together. How did y",  # and mid-word
    "Let's check that together. Hw did you get it?",  # one stray run passes is_language, not this
    "Let's che\ufffdk that together?",
    "42.",
    "",
])
def test_cut_broken_or_wordless_turns_are_not_well_formed(text):
    assert not well_formed(text)


def test_common_latex_commands_are_notation_and_a_backslash_before_soup_is_still_soup():
    assert is_language(r"So we take \frac{3}{4} of \sqrt{16}, and \begin{pmatrix} 1 \end{pmatrix} stays.")
    assert legibility(r"\frac{1}{2} \cdot x") == legibility("{1}{2} x")
    assert not is_language(r"\xqzv \plmk \frac{1}{2} ok")


@pytest.mark.parametrize("text", [
    "Well done! What do you",  # what a tiny tutor learned to stop after (docs/training.md)
    "Let's",
    "Let\u2019s",
    "Good job! Can you",
    "Great! What is",
    "Now look at the",
    "You took 5 away and",
])
def test_a_turn_that_stops_where_no_sentence_ends_is_unfinished(text):
    assert unfinished(text)


@pytest.mark.parametrize("text", [
    "Please recheck your work",  # teachers leave out the full stop: finished
    "So we start with 50 minus 45",
    "Ok, remember there are only 12 eggs to begin with",
    "so for the first step, 18 units is $500, which is 80%",
    "Thank you",
    "What do you get?",
    "Let's check that together.",
    "",
])
def test_a_turn_that_could_end_where_it_does_is_not(text):
    assert not unfinished(text)


def test_of_mrbenchs_responses_only_the_one_its_writer_cut_is_unfinished():
    import json

    from pearl_verl.data.location import data_dir

    conversations = json.loads((data_dir() / "mrbench" / "MRBench_V2.json").read_text())
    cut = [r["response"] for c in conversations for r in c["anno_llm_responses"].values() if unfinished(r["response"])]
    assert len(cut) == 1 and cut[0].rstrip().endswith("depending on the retailer or"), cut
