"""The shared results reader: only a final line a kill cut short is skipped; any other bad line is
an error naming file and line. Resuming drops that cut-short line, so later reads stay clean."""

import json
import logging

import pytest

from pearl_verl.eval.runner import read_results
from pearl_verl.jsonl import drop_cut_tail


def _line(key, **extra):
    return json.dumps({"id": key, "tutor": "t", **extra}, ensure_ascii=False) + "\n"


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_final_line_cut_short_is_skipped_with_one_warning(tmp_path, caplog):
    path = tmp_path / "results.jsonl"
    path.write_text(_line("a") + _line("b") + _line("c")[:20], encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert list(read_results(path)) == ["a", "b"]
    (message,) = _warnings(caplog)
    assert f"{path}:3" in message and "cut off" in message


def test_a_final_line_cut_inside_a_multibyte_character_is_skipped(tmp_path):
    path = tmp_path / "results.jsonl"
    cut = _line("b", note="é").encode("utf-8")
    path.write_bytes(_line("a").encode("utf-8") + cut[: cut.index("é".encode("utf-8")) + 1])
    assert list(read_results(path)) == ["a"]


def test_a_complete_final_line_without_its_newline_is_kept(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(_line("a") + _line("b").rstrip("\n"), encoding="utf-8")
    assert list(read_results(path)) == ["a", "b"]


@pytest.mark.parametrize(
    ("content", "line", "what"),
    [
        (_line("a") + '{"id": "b", "tu\n' + _line("c"), 2, "not valid JSON"),  # corrupt middle line
        (_line("a") + "\n" + "garbage\n" + _line("c"), 3, "not valid JSON"),  # line numbers count blank lines
        (_line("a") + _line("b") + '{"id": "c", "tu\n', 3, "not valid JSON"),  # a terminated line is no cut-off
        (_line("a") + '{"tutor": "t"}\n' + _line("c"), 2, "id: missing"),
        (_line("a") + "[1, 2]\n" + _line("c"), 2, "not a JSON object"),
        (_line("a") + '{"id": "b", "tu\n' + _line("c")[:10], 2, "not valid JSON"),  # the first bad line is named
    ],
)
def test_any_other_bad_line_is_an_error_naming_file_and_line(tmp_path, content, line, what):
    path = tmp_path / "results.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{path}:{line}: .*{what}"):
        read_results(path)


def test_a_middle_line_that_is_not_utf8_is_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(_line("a").encode() + b'{"id": "\xff"}\n' + _line("c").encode())
    with pytest.raises(ValueError, match=rf"^{path}:2: .*UTF-8"):
        read_results(path)


def test_dropping_the_cut_tail_before_appending_keeps_the_file_readable(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(_line("a") + _line("b")[:15], encoding="utf-8")
    assert drop_cut_tail(path) is True
    with path.open("a", encoding="utf-8") as out:
        out.write(_line("b"))
    assert path.read_text(encoding="utf-8") == _line("a") + _line("b")
    assert list(read_results(path)) == ["a", "b"]


def test_a_complete_unterminated_tail_is_terminated_not_dropped(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(_line("a") + _line("b").rstrip("\n"), encoding="utf-8")
    assert drop_cut_tail(path) is False
    assert path.read_text(encoding="utf-8") == _line("a") + _line("b")
    assert drop_cut_tail(path) is False  # already on a line boundary: nothing changes
    assert path.read_text(encoding="utf-8") == _line("a") + _line("b")


def test_dropping_a_tail_longer_than_one_read_block(tmp_path):
    path = tmp_path / "results.jsonl"
    long = _line("b", text="x" * 200_000)
    path.write_text(_line("a") + long[:150_000], encoding="utf-8")
    assert drop_cut_tail(path) is True
    assert path.read_text(encoding="utf-8") == _line("a")
    path.write_text(long[:150_000], encoding="utf-8")  # the only line, cut short
    assert drop_cut_tail(path) is True and path.read_bytes() == b""
    missing = tmp_path / "missing.jsonl"
    assert drop_cut_tail(missing) is False and not missing.exists()
