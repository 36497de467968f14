"""``pearl-verl advantage`` on the shipped example and on bad files; what the CLI lets through to the screen."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch

from pearl_verl.advantage.estimator import compute_pearl_advantage
from pearl_verl.advantage.report import example_path, load_judged_rows
from pearl_verl.cli import main
from pearl_verl.dims import DIMENSIONS


def test_example_report_matches_the_estimator(capsys):
    assert main(["advantage", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    source = load_judged_rows(example_path())
    assert len(rows) == len(source) == 18
    scores = torch.tensor([[float("nan") if r[d] is None else r[d] for d in DIMENSIONS] for r in source])
    want = compute_pearl_advantage(
        scores, [r["tutor_turns"] for r in source], [bool(r["completed"]) for r in source],
        [r["uid"] for r in source], valid=[bool(r["judge_ok"]) for r in source],
    )
    assert [r["advantage"] for r in rows] == pytest.approx(want.tolist(), abs=1e-5)
    failed = [r for r in rows if not r["judge_ok"]]
    assert failed and all(r["advantage"] == 0 for r in failed)
    assert all(v is None for v in failed[0]["shaped"].values())


def test_text_report_shows_groups_and_metrics(capsys):
    assert main(["advantage", "--gamma", "1.0", "--aggregation", "reward"]) == 0
    out = capsys.readouterr().out
    assert "gamma=1.0, discretize=True, aggregation=reward" in out
    assert "group gsm8k-test-0042 (8 dialogues)" in out
    assert "pearl/judge/failure_rate = 0.1111" in out


def test_weights_option(capsys):
    weights = ",".join(["0.3", "0.3"] + ["0.0666666667"] * 6)
    assert main(["advantage", "--weights", weights, "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 18


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"uid": "a", "acc": 0.5}\n{not json}\n', r":2: not valid JSON"),
        ('{"acc": 0.5}\n', r":1: uid: missing"),
        ("[1, 2]\n", r":1: expected a JSON object \(judged-dialogue file\), got list"),
        ("\n\n", r"no judged dialogues found"),
    ],
)
def test_bad_files_give_located_errors(tmp_path, capsys, content, match):
    path = tmp_path / "judged.jsonl"
    path.write_text(content)
    assert main(["advantage", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and re.search(match, err)


def test_bad_score_names_the_line(tmp_path, capsys):
    good = {d: 0.5 for d in DIMENSIONS} | {"uid": "g", "judge_ok": 1, "completed": 1, "tutor_turns": 3}
    path = tmp_path / "judged.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {"leak": 1.7}) + "\n" + json.dumps(good | {"meta": None}) + "\n")
    assert main(["advantage", str(path), "--gamma", "1.0"]) == 2
    assert f"Reward field 'meta' of {path}:3 is None" in capsys.readouterr().err
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {"leak": 1.7}) + "\n")
    assert main(["advantage", str(path)]) == 2
    assert "dim_scores[1, 1] = 1.7 is outside [0, 1]" in capsys.readouterr().err
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {"leak": 1.0000001}) + "\n")
    assert main(["advantage", str(path)]) == 2
    err = capsys.readouterr().err
    assert "dim_scores[1, 1] = 1.0000001" in err and "is outside [0, 1]" in err  # not "= 1 is outside"


def test_bad_gamma(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["advantage", "--gamma", "1.5"])
    assert exited.value.code == 2
    assert ("argument --gamma: got 1.5; allowed: a finite number greater than 0 and at most 1 (the per-turn decay "
            "factor" in capsys.readouterr().err)


def test_console_script_is_installed():
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from pearl_verl.cli import main_exit; sys.argv=['pearl-verl','--version']; main_exit()"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("pearl_verl ")
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts["pearl-verl"] == "pearl_verl.cli:main_exit"


CHATTY_COMMAND = '''
import logging

def register(sub):
    sub.add_parser("chatty").set_defaults(handler=run)

def run(args):
    from transformers.utils import logging as transformers_logging  # a handler of its own, past the root's filter

    transformers_logging.get_logger("transformers.utils.import_utils").warning("requires torchvision (not installed)")
    logging.getLogger("verl.plugin.platform.platform_manager").warning("No supported accelerator detected")
    logging.getLogger("transformers.modeling_utils").error("weights could not be read")
    logging.getLogger("pearl_verl.judge.client").warning("the judge refused json_schema")
    return 0
'''


@pytest.mark.parametrize("verbose", [False, True])
def test_library_warnings_wait_for_verbose_and_ours_and_errors_always_show(tmp_path, verbose):
    (tmp_path / "chatty_command.py").write_text(CHATTY_COMMAND)
    argv = ["-v", "chatty"] if verbose else ["chatty"]
    script = f"import sys; from pearl_verl.cli import main; sys.exit(main({argv!r}, ['chatty_command']))"
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    env = {key: value for key, value in os.environ.items() if key != "TRANSFORMERS_VERBOSITY"}  # main() in-process sets it
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          env={**env, "PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr
    assert "the judge refused json_schema" in proc.stderr and "weights could not be read" in proc.stderr
    assert ("No supported accelerator detected" in proc.stderr) is verbose, proc.stderr
    assert ("requires torchvision" in proc.stderr) is verbose, proc.stderr
