"""The shared JSONL helpers: resumable appends after a kill, strict reads with located errors."""

import json

import pytest

from pearl_verl.jsonl import end_with_newline, read_unique_records


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
    with pytest.raises(ValueError, match=r"in.jsonl:2 is not a widget: KeyError"):
        _read(path)
    path.write_text('{"id": "x"}\n{"id": "x"}\n')
    with pytest.raises(ValueError, match=r"in.jsonl:2: widget id 'x' appears twice"):
        _read(path)
    path.write_text("\n\n")
    with pytest.raises(ValueError, match=r"in.jsonl holds no widgets"):
        _read(path)
