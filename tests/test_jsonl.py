"""The shared JSONL helpers: resumable appends after a kill, strict reads with located errors."""

import json

import pytest

from pearl_verl.errors import InputError
from pearl_verl.jsonl import (
    end_with_newline,
    input_file,
    parse_line,
    read_appended,
    read_json,
    read_objects,
    read_text,
    read_unique_records,
)


def test_a_line_cut_by_a_kill_is_terminated_so_the_next_append_stands_alone(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b", "sco')
    end_with_newline(path)
    with path.open("a") as handle:
        handle.write(json.dumps({"id": "c"}) + "\n")
    assert path.read_text().splitlines() == ['{"id": "a"}', '{"id": "b", "sco', '{"id": "c"}']
    end_with_newline(path)  # already terminated: nothing added
    assert path.read_text().count("\n") == 3
    end_with_newline(tmp_path / "missing.jsonl")
    assert not (tmp_path / "missing.jsonl").exists()


def _read(path):
    return read_unique_records(path, lambda row, number: (row["id"], number), lambda r: r[0], "widget", "widget id")


def test_records_keep_their_line_numbers_and_errors_name_file_and_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "x"}\n\n{"id": "y"}\n')
    assert _read(path) == [("x", 1), ("y", 3)]
    path.write_text('{"id": "x"}\n{"name": "y"}\n')
    with pytest.raises(InputError, match=r"in.jsonl:2: not a widget: no field 'id'"):
        _read(path)
    path.write_text('{"id": "x"}\n{"id": "x"}\n')
    with pytest.raises(ValueError, match=r"in.jsonl:2: widget id 'x' appears twice"):
        _read(path)
    path.write_text("\n\n")
    with pytest.raises(InputError, match=r"in.jsonl: holds no widgets"):
        _read(path)


def test_input_files_are_checked_before_they_are_opened(tmp_path):
    with pytest.raises(InputError, match=r"missing.jsonl: widget file does not exist\.$"):
        input_file(tmp_path / "missing.jsonl", "widget file")
    with pytest.raises(InputError, match=r": widget file is a directory; give the file itself\.$"):
        list(read_objects(tmp_path, "widget file"))
    with pytest.raises(InputError, match=r"^/dev/null: widget file is not a regular file; give a file\.$"):
        input_file("/dev/null", "widget file")  # it exists: "does not exist" would send the user looking for it
    path = tmp_path / "ok.jsonl"
    path.write_text('{"a": 1}\n')
    assert input_file(path, "widget file") == path


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b'{"a": 1}\n\n\xff\xfe\n', r"in.jsonl:3: not UTF-8 text \(byte 1\)"),
        (b'{"a": 1}\n{"a": 1,}\n', r"in.jsonl:2: not valid JSON \(Expecting property name"),
        (b'{"a": 1}\n"text"\n', r"in.jsonl:2: expected a JSON object \(widget file\), got str"),
    ],
)
def test_read_objects_names_the_first_bad_line(tmp_path, content, match):
    path = tmp_path / "in.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match=match):
        list(read_objects(path, "widget file"))


def test_read_text_and_json_name_file_and_line(tmp_path):
    path = tmp_path / "prompt.txt"
    path.write_bytes("line one\nline two \u00e9\n".encode())
    assert read_text(path, "prompt") == "line one\nline two \u00e9\n"
    path.write_bytes(b"line one\nline \xff two\n")
    with pytest.raises(InputError, match=r"prompt.txt:2: not UTF-8 text \(byte 15 of the file\)"):
        read_text(path, "prompt")
    path = tmp_path / "c.json"
    path.write_text('{\n  "units": [\n    oops\n  ]\n}\n')
    with pytest.raises(InputError, match=r"c.json:3: not valid JSON \(Expecting value at column 5\)"):
        read_json(path, "curriculum file")


DEEP = b"[" * 100_000  # json.loads would exhaust the stack: RecursionError, which is no ValueError


def test_a_line_nested_too_deeply_is_a_bad_line_not_a_recursion_error(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"id": "x"}\n' + DEEP + b"\n")
    with pytest.raises(InputError, match=r"in.jsonl:2: JSON nested too deeply to read$"):
        list(read_objects(path, "widget file"))
    with pytest.raises(InputError, match=r"in.jsonl:2: JSON nested too deeply to read$"):
        _read(path)  # read_unique_records: advantage and compare build-pairs read through it
    with pytest.raises(InputError, match=r"in.jsonl:2: JSON nested too deeply to read; only a last line cut"):
        list(read_appended(path))
    with pytest.raises(InputError, match=r"^JSON nested too deeply to read$"):
        parse_line(DEEP)  # what judge's reader calls: the line is judged as failed, the others go on
    whole = tmp_path / "c.json"
    whole.write_bytes(DEEP)
    with pytest.raises(InputError, match=r"c.json: JSON nested too deeply to read\.$"):
        read_json(whole, "curriculum file")


def test_read_objects_can_hand_bad_lines_over_and_go_on(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\n' + DEEP + b'\n"text"\n\xff\n{"a": 2}\n{"cut')
    bad = []
    assert list(read_objects(path, "widget file", on_bad=bad.append)) == [(1, {"a": 1}), (5, {"a": 2})]
    assert [str(e).split(": ", 1)[0].rsplit(":", 1)[1] for e in bad] == ["2", "3", "4", "6"]
    assert all(isinstance(e, InputError) for e in bad) and "nested too deeply" in str(bad[0])
