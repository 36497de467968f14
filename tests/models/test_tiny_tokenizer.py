"""The tiny tokenizer writes the local tutors' words whole: a tutor sampling its tokens samples words, not pieces."""

import pytest

from pearl_verl.dialogue.legible import legibility
from pearl_verl.models.tiny import build_offline_tokenizer
from pearl_verl.tutor.styles import TEACHER_LINES
from pearl_verl.tutor.tutor_prompts import END_MARKER


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return build_offline_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.mark.parametrize("line", TEACHER_LINES)
def test_every_token_of_a_teachers_line_is_a_whole_word_or_a_sign(tokenizer, line):
    pieces = [tokenizer.decode([i]) for i in tokenizer(line)["input_ids"]]
    assert "".join(pieces) == line
    for piece in pieces:
        counted = legibility(piece)
        assert counted.other == 0, f"{piece!r} of {line!r} is a piece of a word"


def test_the_end_marker_is_one_token_that_decodes_as_written(tokenizer):
    ids = tokenizer(f"Well done! {END_MARKER}")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids[-1]) == END_MARKER
    assert tokenizer.decode(ids) == f"Well done! {END_MARKER}"


def test_any_text_still_tokenizes_and_round_trips(tokenizer):
    text = "Quetzalli's ducks lay 16 eggs: 16 - 3 - 4 = 9, \u00e9t\u00e9 \u2713"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
