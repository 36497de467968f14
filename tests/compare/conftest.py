"""Shared fixtures of the compare tests: a small judged eval-tutor run with two tutors whose names
never appear in a page, and helpers to build votes and studies."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GSM8K_FIXTURE = ROOT / "pearl_verl" / "resources" / "data" / "gsm8k" / "test_first50.jsonl"
# Names that occur in no dialogue, rubric title or template, so finding one in a page means a leak.
TUTOR_A, TUTOR_B = "zorbtutor", "quaxtutor"
SCRIPT_PAYLOAD = "<script>window.__pwned=1</script><b>bold</b>"
IMG_PAYLOAD = '<img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="session")
def eval_run(tmp_path_factory):
    """eval-tutor on 3 GSM8K problems: TUTOR_A (scripted Socratic) and TUTOR_B (scripted leaking), judged offline."""
    from pearl_verl.cli import main

    out = tmp_path_factory.mktemp("eval-run")
    code = main(
        [
            "eval-tutor", str(GSM8K_FIXTURE), "--limit", "3", "--judge", "offline", "--out", str(out),
            "--tutor", f"name={TUTOR_A},scripted=socratic", "--tutor", f"name={TUTOR_B},scripted=leaking",
        ]
    )  # fmt: skip
    assert code == 0
    return out


@pytest.fixture(scope="session")
def hostile_run(eval_run, tmp_path_factory):
    """The same run with untrusted HTML in one item's dialogue of TUTOR_B (tutor and student turns).

    The changed line is appended, as eval-tutor's ``--retry-failed`` would: the last line per id wins.
    """
    out = tmp_path_factory.mktemp("hostile-run")
    results = (eval_run / "results.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in results.splitlines() if line.strip()]
    row = json.loads(json.dumps(min((r for r in rows if r["tutor"] == TUTOR_B), key=lambda r: r["item_id"])))
    turns = row["episode"]["turns"]
    tutor = next(i for i, t in enumerate(turns) if t["role"] == "tutor")
    turns[tutor]["text"] = f"Look: {SCRIPT_PAYLOAD} done"
    turns[tutor + 1]["text"] = f"Student says {IMG_PAYLOAD}"
    (out / "results.jsonl").write_text(results + json.dumps(row) + "\n", encoding="utf-8")
    (out / "manifest.json").write_text((eval_run / "manifest.json").read_text(encoding="utf-8"), encoding="utf-8")
    return out


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def make_vote(pair_id, annotator, outcome, left="a", dims=None, tutors=(TUTOR_A, TUTOR_B), margin="low", comment=""):
    from pearl_verl.compare.vote import Vote

    return Vote(pair_id, tutors[0], tutors[1], margin, annotator, outcome, left, dims or {}, comment)


@pytest.fixture(scope="session")
def cx():
    """Constants and helpers (pytest's importlib mode cannot import conftest by name)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        ROOT=ROOT,
        GSM8K=GSM8K_FIXTURE,
        TUTOR_A=TUTOR_A,
        TUTOR_B=TUTOR_B,
        SCRIPT_PAYLOAD=SCRIPT_PAYLOAD,
        IMG_PAYLOAD=IMG_PAYLOAD,
        read_jsonl=read_jsonl,
        vote=make_vote,
    )
