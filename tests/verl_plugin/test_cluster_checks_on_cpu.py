"""doctor --cluster on CPU: versions against verl's pins, endpoints against local servers, parquet data."""

import importlib.metadata as metadata
import json
from pathlib import Path

import pandas as pd

from pearl_verl import cli
from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.rubric import RUBRIC
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.verl_plugin import cluster_checks
from pearl_verl.verl_plugin.cluster_checks import data_check, endpoint_checks, verl_pins, version_checks

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "pearl" / "run_qwen3_30b_a3b_pearl_gspo_fsdp.sh"


def test_pins_come_from_verls_metadata_and_a_local_build_label_matches(monkeypatch):
    pins = verl_pins()
    assert pins["vllm"] == "0.24.0" and pins["flash-attn"] == "2.8.3" and pins["torch"] == "2.11.0"  # verl 0.9.1
    real = metadata.version
    fake = {"torch": "2.11.0+cu130", "vllm": "0.24.0", "transformers": "5.9.0", "flash-attn": "2.8.3"}
    monkeypatch.setattr(cluster_checks.metadata, "version", lambda name: fake.get(name) or real(name))
    checks = version_checks()
    assert [c.ok for c in checks] == [True] * 4, [c.detail for c in checks]


def test_this_cpu_machine_fails_with_the_pip_line(monkeypatch):
    checks = {c.name: c for c in version_checks("megatron")}
    assert not checks["vllm (cluster)"].ok and "verl[vllm]==0.9.1" in checks["vllm (cluster)"].fix
    assert "megatron-core (cluster)" in checks and "verl[megatron]" in checks["megatron-core (cluster)"].fix
    torch = checks["torch (cluster)"]
    assert not torch.ok and "tested 2.11.0" in torch.detail and "torch==2.11.0" in torch.fix


def test_a_vllm_like_endpoint_passes_every_check(ranking_judge, ranking_judge_teachers):
    teachers = ranking_judge_teachers(agree=True)
    with LocalChatServer(ranking_judge, model="pearl-judge") as server:
        checks = endpoint_checks("judge", server.base_url, "pearl-judge", None, samples=3, human_file=teachers)
        sent = server.requests[0]
    assert [c.name for c in checks] == ["judge endpoint", "judge sampling fields", "judge structured output",
                                        "judge judgement", "judge calibration", "judge vs teachers"]
    assert all(c.ok for c in checks), [c.detail for c in checks]
    assert sent["top_k"] == 20 and sent["seed"] == 0 and sent["n"] == 3  # what the check asked the server to take
    assert checks[-1].detail == ("orders MRBench's pairs as its teachers do on 1 conversations "
                                 "(Revealing_of_the_Answer 100%, Tutor_Tone 100%), parses 100%")


def test_a_judge_that_disagrees_with_the_teachers_fails_with_the_recipes_gate_named(ranking_judge,
                                                                                   ranking_judge_teachers):
    teachers = ranking_judge_teachers(agree=False)
    with LocalChatServer(ranking_judge, model="pearl-judge") as server:
        checks = {c.name: c for c in endpoint_checks("judge", server.base_url, "pearl-judge", None,
                                                     human_file=teachers)}
    assert checks["judge calibration"].ok  # it ranks our pairs; the teachers label these the other way round
    human = checks["judge vs teachers"]
    assert not human.ok and "Revealing_of_the_Answer 0%" in human.detail
    assert "it orders under 50% of the pairs as the teachers do on Revealing_of_the_Answer" in human.detail
    assert "the recipes stop here too (JUDGE_HUMAN_CHECK=0 skips it" in human.fix


def test_a_judge_that_cannot_rank_the_calibration_pairs_fails_with_the_recipes_gate_named():
    same = json.dumps({d: {c.key: {"score": c.high, "rationale": f"turn 3 shows {c.key}"}
                           for c in RUBRIC.for_dimension(d)} for d in DIMENSIONS})
    with LocalChatServer(lambda request: same if "rubric" in request["messages"][0]["content"].lower() else "OK",
                         model="pearl-judge") as server:
        checks = {c.name: c for c in endpoint_checks("judge", server.base_url, "pearl-judge", None)}
    assert checks["judge judgement"].ok  # it judges; it does not rank
    calibration = checks["judge calibration"]
    assert not calibration.ok and "orders 0% of 16 comparisons as built" in calibration.detail
    assert "the recipes stop here too (JUDGE_CHECK=0 skips it" in calibration.fix


def test_endpoint_failures_name_their_cause(ranking_judge):
    with LocalChatServer(ranking_judge, model="other") as server:
        (check,) = endpoint_checks("student", server.base_url, "pearl-student", None)
    assert not check.ok and "serves ['other'], not 'pearl-student'" in check.detail

    def no_top_k(request):
        return Reply(status=400) if "top_k" in request else "OK"

    with LocalChatServer(no_top_k, model="m") as server:
        checks = endpoint_checks("student", server.base_url, "m", None)
    assert checks[0].ok and not checks[1].ok and "top_k, seed, n=2 refused" in checks[1].detail

    with LocalChatServer(lambda r: Reply(texts=("one",)), model="m") as server:
        checks = endpoint_checks("student", server.base_url, "m", None)
    assert checks[1].ok and "the server ignores n, so the judge will ask for each sample in its own request" in (
        checks[1].detail)

    # a refused key or a failing server is no verdict on the sampling fields: the fix names the real cause
    with LocalChatServer(lambda r: Reply(status=401), model="m") as server:
        checks = endpoint_checks("judge", server.base_url, "m", None)
    assert not checks[1].ok and "the server refused the key (http_401)" in checks[1].detail
    assert "--judge-api-key-env" in checks[1].fix and "top_k" not in checks[1].fix
    with LocalChatServer(lambda r: Reply(status=503), model="m") as server:
        checks = endpoint_checks("student", server.base_url, "m", None)
    assert not checks[1].ok and "the endpoint failed the first chat request (http_503)" in checks[1].detail
    assert "server is up" in checks[1].fix and "top_k" not in checks[1].fix

    def no_json_schema(request):  # llama-cpp-python's server: json_object only
        kind = (request.get("response_format") or {}).get("type")
        return Reply(status=500, error_message="json_schema unsupported") if kind == "json_schema" else "OK"

    with LocalChatServer(no_json_schema, model="m") as server:
        checks = endpoint_checks("student", server.base_url, "m", None)
    assert checks[1].ok and not checks[2].ok
    assert "json_schema refused (http_500: " in checks[2].detail and "the server takes json_object" in checks[2].detail
    assert checks[2].fix.startswith("set STRUCTURED_OUTPUT=json_object")

    with LocalChatServer(lambda r: "I think the tutor did well.", model="j") as server:
        checks = endpoint_checks("judge", server.base_url, "j", None)
    assert checks[1].ok and checks[2].ok and not checks[3].ok and "unparseable or failed" in checks[3].detail

    with LocalChatServer(ranking_judge, model="j") as server:  # a key variable that is not set: a failed line, no crash
        (unset,) = endpoint_checks("judge", server.base_url, "j", "PEARL_DOCTOR_UNSET_KEY")
    assert not unset.ok and "PEARL_DOCTOR_UNSET_KEY" in unset.detail and "not set" in unset.detail

    (down,) = endpoint_checks("judge", "http://127.0.0.1:9/v1", "j", None)
    assert not down.ok and "GET /models failed" in down.detail and "serve_judge.sh" in down.fix


def _prepared(folder: Path) -> Path:
    assert cli.main(["prepare-data", "gsm8k=@fixture", "-o", str(folder)]) == 0
    return folder


def test_data_check_reads_prepared_parquet_and_names_the_bad_row(tmp_path):
    _prepared(tmp_path / "p")
    good = data_check(tmp_path / "p" / "train.parquet")
    assert good.ok and "rows parse" in good.detail
    frame = pd.read_parquet(tmp_path / "p" / "train.parquet")
    frame["extra_info"] = [{"pearl": "{not json"} if i == 2 else e for i, e in enumerate(frame["extra_info"])]
    frame.to_parquet(tmp_path / "bad.parquet")
    bad = data_check(tmp_path / "bad.parquet")
    assert not bad.ok and bad.detail.startswith("row 2:")
    frame.drop(columns=["extra_info"]).to_parquet(tmp_path / "plain.parquet")
    assert "no column ['extra_info']" in data_check(tmp_path / "plain.parquet").detail


def test_doctor_cluster_reads_the_recipe_and_exits_1_on_this_cpu_machine(tmp_path, monkeypatch, capsys,
                                                                          ranking_judge):
    monkeypatch.setenv("DATA_DIR", str(_prepared(tmp_path / "p")))
    capsys.readouterr()
    student = LocalChatServer(ranking_judge, model="pearl-student")
    judge = LocalChatServer(ranking_judge, model="pearl-judge")
    with student, judge:
        code = cli.main(["doctor", "--cluster", "--recipe", str(RECIPE), "--json",
                         "--student-base-url", student.base_url, "--judge-base-url", judge.base_url])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert code == 1 and not checks["GPUs"]["ok"]  # no GPU here
    for name in ("student endpoint", "student sampling fields", "judge endpoint", "judge judgement",
                 f"data {tmp_path / 'p' / 'train.parquet'}", f"data {tmp_path / 'p' / 'val.parquet'}"):
        assert checks[name]["ok"], checks[name]
