"""The one data location: --data-dir > PEARL_VERL_DATA_DIR > the clone's data/; the committed files
are the exact bytes data/README.md lists, each source with its LICENSE and NOTICE."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from pearl_verl.data import location
from pearl_verl.data.location import CLONE_DATA_DIR, ENV_VAR, data_dir, dataset_file

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "data" / "README.md"
TABLE_ROW = re.compile(r"^\| (\S+) \| ([\d,]+) \| ([\d,]+) \| `([0-9a-f]{64})` \|")


def table():
    """data/README.md's rows: file -> (rows, bytes, sha256)."""
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        if match := TABLE_ROW.match(line):
            name, count, size, digest = match.groups()
            rows[name] = (int(count.replace(",", "")), int(size.replace(",", "")), digest)
    return rows


def test_the_clone_data_folder_is_the_repository_one():
    assert CLONE_DATA_DIR == ROOT / "data"


def test_default_is_the_clone_data_folder(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert data_dir() == CLONE_DATA_DIR
    assert data_dir("") == CLONE_DATA_DIR  # an empty --data-dir counts as not given


def test_argument_beats_environment_beats_clone(monkeypatch, tmp_path):
    from_env, from_arg = tmp_path / "env", tmp_path / "arg"
    from_env.mkdir()
    from_arg.mkdir()
    monkeypatch.setenv(ENV_VAR, str(from_env))
    assert data_dir() == from_env
    assert data_dir(from_arg) == from_arg
    assert data_dir(str(from_arg)) == from_arg


def test_a_missing_explicit_or_environment_folder_is_an_error_not_a_fallback(monkeypatch, tmp_path):
    missing = tmp_path / "nowhere"
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(ValueError, match=rf"{re.escape(str(missing))} \(from --data-dir .*\) does not exist"):
        data_dir(missing)
    monkeypatch.setenv(ENV_VAR, str(missing))
    with pytest.raises(ValueError, match=rf"\(from {ENV_VAR}=.*\) does not exist; point it at a copy"):
        data_dir()


@pytest.mark.parametrize("stray_data_folder", [False, True])
def test_without_a_clone_the_error_names_every_place_and_the_fix(monkeypatch, tmp_path, stray_data_folder):
    installed = tmp_path / "site-packages" / "data"
    if stray_data_folder:  # some other wheel's site-packages/data is not ours
        installed.mkdir(parents=True)
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(location, "CLONE_DATA_DIR", installed)
    with pytest.raises(ValueError) as error:
        data_dir()
    message = str(error.value)
    assert "no --data-dir was given" in message and f"{ENV_VAR} is not set" in message
    assert f"{installed} is not the data/ folder of a clone" in message and ENV_VAR in message


def test_dataset_file_prefers_the_path_as_given_then_the_data_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    assert dataset_file("gsm8k/test.jsonl") == CLONE_DATA_DIR / "gsm8k" / "test.jsonl"
    (tmp_path / "gsm8k").mkdir()
    (tmp_path / "gsm8k" / "test.jsonl").write_text("{}\n")
    assert dataset_file("gsm8k/test.jsonl") == Path("gsm8k/test.jsonl")  # the working directory's own file wins
    other = tmp_path / "other"
    (other / "math500").mkdir(parents=True)
    (other / "math500" / "test.jsonl").write_text("{}\n")
    assert dataset_file("math500/test.jsonl", other) == other / "math500" / "test.jsonl"
    # Found nowhere: unchanged, so the reader's error names what the user typed.
    assert dataset_file("nope/none.jsonl") == Path("nope/none.jsonl")


def test_the_commands_read_a_data_folder_name_from_any_directory(monkeypatch, tmp_path, capsys):
    from pearl_verl.cli import main

    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "turns.jsonl"
    assert main(["simulate", "gsm8k/test.jsonl", "--limit", "2", "--out", str(out)]) == 0
    assert out.read_text().count("\n") > 0
    assert main(["prepare-data", "math=math500/test.jsonl", "--limit", "5", "-o", str(tmp_path / "prep")]) == 0
    summary = json.loads((tmp_path / "prep" / "prepare_summary.json").read_text())
    assert summary["sources"][0]["location"] == str(CLONE_DATA_DIR / "math500" / "test.jsonl")


def test_every_data_file_is_in_the_table_with_its_bytes_and_sha256():
    listed = table()
    on_disk = {
        str(p.relative_to(CLONE_DATA_DIR)): p for p in CLONE_DATA_DIR.glob("*/*") if p.name not in ("LICENSE", "NOTICE")
    }
    assert set(listed) == set(on_disk), "data/README.md's table and data/ list different files"
    for name, (rows, size, digest) in listed.items():
        blob = on_disk[name].read_bytes()
        assert len(blob) == size, name
        assert hashlib.sha256(blob).hexdigest() == digest, f"{name} differs from its recorded sha256"
        count = len(json.loads(blob)) if name.endswith(".json") else sum(1 for line in blob.splitlines() if line.strip())
        assert count == rows, name


def test_every_source_folder_carries_its_licence_and_notice():
    licences = {"gsm8k": "MIT License", "math500": "MIT License"}
    for folder in sorted(p for p in CLONE_DATA_DIR.iterdir() if p.is_dir()):
        licence = (folder / "LICENSE").read_text(encoding="utf-8")
        notice = (folder / "NOTICE").read_text(encoding="utf-8")
        assert licence.startswith(licences.get(folder.name, "Attribution-ShareAlike 4.0 International")), folder
        assert "Source:" in notice and "@" in notice and "unmodified" in notice, folder
        if folder.name not in licences:
            assert "CC BY-SA 4.0" in notice and "separate from" in notice, folder
