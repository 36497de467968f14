"""Human labels: the shipped MRBench file reads whole, a BEA 2025-style file reads with only its labels,
and every malformed file or row is an InputError naming the row and the field."""

import json
from collections import Counter

import pytest

from pearl_verl.data.location import ENV_VAR, data_dir
from pearl_verl.data.mrbench import (
    HUMAN_DIMENSIONS,
    label_class,
    mrbench_file,
    parse_history,
    read_human_labels,
    select_splits,
)
from pearl_verl.errors import InputError


@pytest.fixture(scope="module")
def mrbench():
    return read_human_labels(mrbench_file())


def test_the_default_file_is_the_shipped_one(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert mrbench_file() == data_dir() / "mrbench" / "MRBench_V2.json"
    assert mrbench_file().is_file()


def test_the_shipped_file_reads_whole(mrbench):
    assert len(mrbench) == 200
    assert [c.index for c in mrbench] == list(range(200))
    assert sum(len(c.responses) for c in mrbench) == 1655
    assert Counter(c.split for c in mrbench) == {"test": 159, "train": 34, "val": 7}
    assert Counter(c.source for c in mrbench) == {"MathDial": 145, "Bridge": 55}
    tutors = Counter(r.tutor for c in mrbench for r in c.responses)
    assert tutors == {name: 200 for name in ("Expert", "GPT4", "Gemini", "Llama318B", "Llama31405B", "Mistral",
                                             "Phi3", "Sonnet")} | {"Novice": 55}
    # Only Bridge rows have a novice teacher, a topic; only MathDial rows a worked solution.
    for c in mrbench:
        bridge = c.source == "Bridge"
        assert ("Novice" in {r.tutor for r in c.responses}) == bridge
        assert (c.topic is not None) == bridge and (c.ground_truth_solution is None) == bridge
    # MRBench repeats five ids on different rows, which is why rows carry their index.
    assert len({c.conversation_id for c in mrbench}) == 195


def test_every_shipped_response_has_all_eight_labels_and_their_counts(mrbench):
    responses = [r for c in mrbench for r in c.responses]
    assert all(list(r.labels) == list(HUMAN_DIMENSIONS) for r in responses)
    assert all(r.text.strip() and r.conversation_id for r in responses)
    counts = {d: Counter(r.labels[d] for r in responses) for d in HUMAN_DIMENSIONS}
    assert counts["Mistake_Identification"] == {"Yes": 1326, "To some extent": 96, "No": 233}
    assert counts["Revealing_of_the_Answer"] == {
        "No": 1389, "Yes (and the answer is correct)": 237, "Yes (but the answer is incorrect)": 29,
    }
    assert counts["Tutor_Tone"] == {"Encouraging": 528, "Neutral": 1126, "Offensive": 1}
    assert counts["humanlikeness"] == {"Yes": 1462, "To some extent": 102, "No": 91}


def test_ordinal_classes_put_the_good_label_highest(mrbench):
    assert label_class("Mistake_Identification", "Yes") == 2 and label_class("Actionability", "No") == 0
    assert label_class("Revealing_of_the_Answer", "No") == 2
    assert label_class("Revealing_of_the_Answer", "Yes (and the answer is correct)") == 1
    assert label_class("Revealing_of_the_Answer", "Yes (but the answer is incorrect)") == 0
    assert [label_class("Tutor_Tone", t) for t in ("Offensive", "Neutral", "Encouraging")] == [0, 1, 2]
    first = mrbench[0].responses[0]  # Gemini on the first row: all Yes, Revealing No, Tutor_Tone Neutral
    assert first.tutor == "Gemini"
    assert first.classes == {d: 2 for d in HUMAN_DIMENSIONS} | {"Tutor_Tone": 1}


def test_split_filter_keeps_the_asked_splits_and_refuses_what_cannot_be_filtered(mrbench, tmp_path):
    test = read_human_labels(mrbench_file(), splits=["test"])
    assert len(test) == 159 and {c.split for c in test} == {"test"}
    assert [c.index for c in select_splits(mrbench, "val")] == [c.index for c in mrbench if c.split == "val"]
    with pytest.raises(InputError, match="no split was named"):
        select_splits(mrbench, [])
    tuning = select_splits(mrbench, ["train", "val"])
    assert len(tuning) == 41 and sum(len(c.responses) for c in tuning) == 369
    with pytest.raises(InputError, match=r"no conversation has split \['dev'\]; the file's splits are \['test', "):
        select_splits(mrbench, ["dev"])
    bea = tmp_path / "bea.json"
    bea.write_text(json.dumps([_bea_row()]), encoding="utf-8")
    with pytest.raises(InputError, match=r"row 1 \(list index 0, conversation_id '258053434'\): field 'Split': is abs"):
        read_human_labels(bea, splits=["test"])


def _bea_row(**changes):
    """A BEA 2025 dev-set-style row: Bridge separators, four dimensions, one response unannotated."""
    row = {
        "conversation_id": "258053434",
        "conversation_history": "Tutor: You earn one point for your good beginning. \n Tutor: What is the value of "
                                "3^3? \n Student: 9",
        "tutor_responses": {
            "Sonnet": {
                "response": "Let's double-check that: 3^3 means 3 x 3 x 3.",
                "annotation": {"Actionability": "No", "Mistake_Identification": "Yes", "Mistake_Location": "Yes",
                               "Providing_Guidance": "To some extent"},
            },
            "Tutor_2": {"response": "Not quite. What is 3 x 3?"},
        },
    }
    row.update(changes)
    return row


def test_a_bea_2025_file_reads_with_exactly_its_labels(tmp_path):
    path = tmp_path / "mrbench_v3_devset.json"
    path.write_text(json.dumps([_bea_row()]), encoding="utf-8")
    [conversation] = read_human_labels(path)
    assert conversation.conversation_id == "258053434"
    assert (conversation.source, conversation.split, conversation.topic, conversation.ground_truth_solution) == (
        None, None, None, None
    )
    assert conversation.turns == (
        ("tutor", "You earn one point for your good beginning."),
        ("tutor", "What is the value of 3^3?"),
        ("student", "9"),
    )
    sonnet, unlabelled = conversation.responses
    assert sonnet.tutor == "Sonnet" and sonnet.text == "Let's double-check that: 3^3 means 3 x 3 x 3."
    assert sonnet.labels == {  # in HUMAN_DIMENSIONS' order, not the file's
        "Mistake_Identification": "Yes", "Mistake_Location": "Yes", "Providing_Guidance": "To some extent",
        "Actionability": "No",
    }
    assert list(sonnet.labels) == ["Mistake_Identification", "Mistake_Location", "Providing_Guidance", "Actionability"]
    assert sonnet.classes == {"Mistake_Identification": 2, "Mistake_Location": 2, "Providing_Guidance": 1,
                              "Actionability": 0}
    assert (unlabelled.tutor, unlabelled.labels, unlabelled.classes) == ("Tutor_2", {}, {})


def test_a_null_label_or_annotation_is_absent_not_invented(tmp_path):
    row = _bea_row()
    row["tutor_responses"]["Sonnet"]["annotation"]["Actionability"] = None
    row["tutor_responses"]["Tutor_2"]["annotation"] = None
    path = tmp_path / "nulls.json"
    path.write_text(json.dumps([row]), encoding="utf-8")
    sonnet, other = read_human_labels(path)[0].responses
    assert "Actionability" not in sonnet.labels and len(sonnet.labels) == 3
    assert other.labels == {}


def test_the_history_parser_splits_a_real_conversation_into_alternating_turns(mrbench):
    first = mrbench[0]  # MathDial: a question, the student's solution over several lines, then a probe and reply
    turns = parse_history(first.history)
    assert turns == first.turns
    assert [role for role, _ in turns] == ["tutor", "student", "tutor", "student"]
    assert turns[0][1].startswith("Hi, could you please provide a step-by-step solution")
    # The solution's continuation lines and its bare final-answer line stay in the student's turn.
    assert turns[1][1].startswith("Elliott finished half of his steps") and turns[1][1].endswith("his jog.\n4000")
    assert turns[2] == ("tutor", "can you tell me how you got to your answer?")
    assert turns[3][1].startswith("Sure. I started by figuring out") and "\xa0" not in "".join(t for _, t in turns)


def test_every_shipped_history_parses_and_a_student_turn_is_never_lost(mrbench):
    for c in mrbench:
        roles = [role for role, _ in c.turns]
        assert roles[0] in ("tutor", "student") and "student" in roles, c.index
        # Each role marker in the raw string is one turn: nothing merged, nothing made up.
        assert len(c.turns) == c.history.count("Tutor:") + c.history.count("Student:") + c.history.count("Student :")


def test_a_history_that_opens_without_a_role_is_refused():
    with pytest.raises(ValueError, match="expected the first turn to open with 'Tutor:' or 'Student:'"):
        parse_history("Hello there\nStudent: 9")
    assert parse_history("\n \xa0Student : 9\n") == (("student", "9"),)


def _write(tmp_path, content):
    path = tmp_path / "labels.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


@pytest.fixture
def valid_row(make_mrbench_row):
    """A valid MRBench row (conftest's ``mrbench_row``); ``changes`` replace or add raw fields."""

    def build(**changes):
        row = make_mrbench_row(
            {"Expert": ("Count again.", {"Tutor_Tone": "Neutral"})},
            conversation_id="930-b01c",
            history="Tutor: What is 2+2?\u00a0\n\u00a0Student: 5",
            solution="2 + 2 = 4\n 4",
        )
        return {**row, **changes}

    return build


def _with_response(response):
    return lambda row: [row(), row(anno_llm_responses={"GPT4": response})]


ROW2 = r"row 2 \(list index 1, conversation_id '930-b01c'\)"


@pytest.mark.parametrize(("content", "expected"), [
    ({"conversation_id": "x"}, r"labels\.json: holds a JSON object; expected a list of conversations"),
    ([], r"labels\.json: holds an empty list; expected at least one conversation"),
    (lambda row: [row(), "a string"], r"row 2 \(list index 1\): field '<row>': is a JSON string; expected an object"),
    (lambda row: [row(), row(conversation_id=None)],
     r"row 2 \(list index 1\): field 'conversation_id': is missing or null; expected a non-empty string"),
    (lambda row: [row(), row(conversation_history=None)],
     ROW2 + r": field 'conversation_history': is missing or null; expected the dialogue so far"),
    (lambda row: [row(), row(conversation_history="hello\nStudent: 5")],
     ROW2 + r": field 'conversation_history': starts with 'hello'; expected the first turn to open with 'Tutor:'"),
    (lambda row: [row(), {k: v for k, v in row().items() if k != "anno_llm_responses"}],
     ROW2 + r": field 'anno_llm_responses/tutor_responses': the row has neither; expected exactly one"),
    (lambda row: [row(), row(tutor_responses={})],
     ROW2 + r": field 'anno_llm_responses/tutor_responses': the row has both"),
    (lambda row: [row(), row(anno_llm_responses={})],
     ROW2 + r": field 'anno_llm_responses': is a JSON object; expected a non-empty object of tutor name"),
    (_with_response({"annotation": {}}),
     ROW2 + r": field 'anno_llm_responses\.GPT4\.response': is missing or null; expected the tutor's response"),
    (_with_response({"response": "  \u00a0"}),
     ROW2 + r": field 'anno_llm_responses\.GPT4\.response': is an empty string"),
    (_with_response("just text"),
     ROW2 + r": field 'anno_llm_responses\.GPT4': is 'just text'; expected an object with 'response'"),
    (_with_response({"response": "ok", "annotation": ["Yes"]}),
     ROW2 + r": field 'anno_llm_responses\.GPT4\.annotation': is a JSON list; expected an object of dimension"),
    (_with_response({"response": "ok", "annotation": {"Tutor_Tone": "Friendly"}}),
     ROW2 + r": field 'anno_llm_responses\.GPT4\.annotation\.Tutor_Tone': has label 'Friendly'; expected one of "
            r"\['Offensive', 'Neutral', 'Encouraging'\]"),
    (_with_response({"response": "ok", "annotation": {"Mistake_Identification": "yes"}}),
     ROW2 + r": field 'anno_llm_responses\.GPT4\.annotation\.Mistake_Identification': has label 'yes'; expected one "
            r"of \['No', 'To some extent', 'Yes'\]"),
    (_with_response({"response": "ok", "annotation": {"Humanlikeness": "Yes"}}),
     ROW2 + r": field 'anno_llm_responses\.GPT4\.annotation\.Humanlikeness': is not a known dimension; expected one "
            r"of \['Mistake_Identification', "),
    (lambda row: [row(), row(Split=3)], ROW2 + r": field 'Split': is a JSON number; expected a string"),
    ("", r"labels\.json: is empty; expected a JSON list of conversations"),
    (" \n\t", r"labels\.json: is empty"),
    ('[\n  {"conversation_id": "a",\n   "conversation_history": oops}\n]',
     r"labels\.json:3: is not valid JSON: Expecting value at column 28"),
    (b'[\n{"conversation_id": "caf\xe9"}]', r"labels\.json:2: is not UTF-8 text \(byte 27, b'\\xe9'\); save it as"),
    ("[" * 100_000, r"labels\.json: is nested too deeply"),
], ids=["not-a-list", "empty-list", "row-not-object", "no-id", "missing-history", "history-without-role",
        "no-responses-key", "both-responses-keys", "empty-responses", "response-without-text", "blank-response",
        "response-not-object", "annotation-not-object", "unknown-label", "label-wrong-case", "unknown-dimension",
        "split-not-string", "empty-file", "blank-file", "invalid-json", "not-utf8", "nested-too-deep"])
def test_hostile_files_and_rows_are_located_input_errors(tmp_path, valid_row, content, expected):
    """``content``: the file's content, or a function of ``valid_row`` giving its rows."""
    path = _write(tmp_path, content(valid_row) if callable(content) else content)
    with pytest.raises(InputError, match=expected) as error:
        read_human_labels(path)
    assert str(error.value).startswith(str(path))


@pytest.mark.parametrize("make", [lambda p: p / "absent.json", lambda p: p])
def test_a_missing_path_or_a_folder_is_an_input_error(tmp_path, make):
    with pytest.raises(InputError, match=r"human-label file (does not exist|is a directory)"):
        read_human_labels(make(tmp_path))


def test_a_byte_order_mark_and_numeric_ids_are_accepted(tmp_path, valid_row):
    row = valid_row(conversation_id=258053434)
    path = _write(tmp_path, b"\xef\xbb\xbf" + json.dumps([row]).encode("utf-8"))
    [conversation] = read_human_labels(path)
    assert conversation.conversation_id == "258053434"
    assert conversation.topic is None and conversation.ground_truth_solution == "2 + 2 = 4\n 4"  # "Not Available"
    assert conversation.turns == (("tutor", "What is 2+2?"), ("student", "5"))
    assert conversation.responses[0].labels == {"Tutor_Tone": "Neutral"}
