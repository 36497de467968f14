"""Reports are written whole: a failure while writing keeps the old file, and missing folders are created."""

import json
import os
import stat
from urllib.parse import quote

import pytest

from pearl_verl import cli
from pearl_verl.data.location import SHIPPED_MATHDIAL
from pearl_verl.redact import PLACEHOLDER, remember_secret
from pearl_verl.write_whole import write_whole


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


def test_missing_folders_are_created_and_the_mode_is_a_plain_writes(tmp_path):
    old = os.umask(0o027)
    try:
        written = write_whole(tmp_path / "a" / "b" / "report.json", "{}\n")
    finally:
        os.umask(old)
    assert written.read_text() == "{}\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o640  # 0666 less the umask, not a temporary file's 0600


def test_a_failure_in_the_middle_keeps_the_earlier_file_and_leaves_no_piece(tmp_path):
    target = tmp_path / "pairs.jsonl"
    target.write_text("the earlier run's pairs\n")
    target.chmod(0o604)

    def rows():
        yield "first row\n"
        raise RuntimeError("the disk filled up")

    with pytest.raises(RuntimeError, match="the disk filled up"):
        write_whole(target, rows())
    assert target.read_text() == "the earlier run's pairs\n" and _leftovers(tmp_path) == []
    write_whole(target, ["one\n", "two\n"])
    assert target.read_text() == "one\ntwo\n" and stat.S_IMODE(target.stat().st_mode) == 0o604  # its mode is kept


def test_a_link_is_followed_and_kept(tmp_path):
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "summary.json"
    real.write_text("old")
    link = tmp_path / "summary.json"
    link.symlink_to(real)
    write_whole(link, "new")
    assert link.is_symlink() and real.read_text() == "new" and _leftovers(tmp_path / "real") == []


def test_judge_check_writes_its_report_into_a_folder_that_did_not_exist(tmp_path, capsys):
    report = tmp_path / "reports" / "2026" / "judge_check.json"
    code = cli.main(["judge-check", "--no-progress", "--backend", "offline", "-o", str(report)])
    capsys.readouterr()
    assert code == 0 and json.loads(report.read_text())["passed"] is True
    assert _leftovers(report.parent) == []


def test_simulate_writes_its_summary_into_a_folder_that_did_not_exist(tmp_path, capsys):
    summary = tmp_path / "sums" / "a.json"
    code = cli.main(["simulate", str(SHIPPED_MATHDIAL), "--limit", "1", "--max-turns", "2",
                     "--out", str(tmp_path / "turns.jsonl"), "--summary", str(summary)])
    capsys.readouterr()
    assert code == 0 and json.loads(summary.read_text())["dialogues"] >= 1


def test_a_remembered_key_never_reaches_a_report(tmp_path):
    key = "Qw7/Zr4+Kp9xLm2Tv8Ns"
    remember_secret(key)
    report = write_whole(tmp_path / "judge_check.json", json.dumps({"reply": f"my key is {key}", "url": quote(key)}))
    assert "Qw7" not in report.read_text() and report.read_text().count(PLACEHOLDER) == 2
