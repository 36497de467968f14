"""Malformed input to ``pearl-verl plan`` and ``pearl-verl doctor --cluster``: one ``error:`` line naming
the bad key or file, exit 2, never a traceback; legal odd input (a plain-string data path, null where
null is allowed) goes through."""

import json
import time

import pytest

from pearl_verl import cli
from pearl_verl.errors import InputError
from pearl_verl.plan import plan_cli
from pearl_verl.plan.capacity import ASSUMPTION_RANGES, Assumptions
from pearl_verl.plan.model_specs import SHIPPED
from pearl_verl.verl_plugin.doctor_cli import data_paths

MODULES = ("pearl_verl.plan.plan_cli", "pearl_verl.verl_plugin.doctor_cli")
BASE = """trainer.nnodes=1 trainer.n_gpus_per_node=8 data.train_batch_size=64 actor_rollout_ref.rollout.n=8
data.max_prompt_length=4096 data.max_response_length=16384 actor_rollout_ref.actor.ppo_max_token_len_per_gpu=24576
actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 actor_rollout_ref.rollout.tensor_model_parallel_size=4
actor_rollout_ref.rollout.gpu_memory_utilization=0.6 actor_rollout_ref.actor.strategy=fsdp2
+pearl.agent.max_tutor_turns=15 +pearl.agent.max_tokens_per_turn=6144
"""
"""The shipped FSDP2 recipe's planned settings: fits 8 x H200 (exit 0)."""

TP = "actor_rollout_ref.rollout.tensor_model_parallel_size"
UTIL = "actor_rollout_ref.rollout.gpu_memory_utilization"


def _set(*pairs):
    return [arg for pair in pairs for arg in ("--set", pair)]


def _config(**changes):
    config = json.loads((SHIPPED / "qwen3-32b.json").read_text())
    config.update(changes)
    return {k: v for k, v in config.items() if v != "<drop>"}


CONFIGS = {
    "zero_heads": _config(num_attention_heads=0),
    "text_hidden": _config(hidden_size="4096"),
    "null_vocab": _config(vocab_size=None),
    "bool_layers": _config(num_hidden_layers=True),
    "negative_kv": _config(num_key_value_heads=-8),
    "hidden_below_heads": _config(hidden_size=8, head_dim=None),
    "too_many_per_token": _config(num_experts=4, num_experts_per_tok=5, moe_intermediate_size=8),
    "tied_text": _config(tie_word_embeddings="yes"),
    "no_vocab": _config(vocab_size="<drop>"),
}
RAW_CONFIGS = {
    "bad_json": '{\n  "hidden_size": 5120,\n  "num_hidden_layers": 64,,\n}',
    "nan_layers": json.dumps(_config()).replace('"num_hidden_layers": 64', '"num_hidden_layers": NaN'),
    "inf_layers": json.dumps(_config()).replace('"num_hidden_layers": 64', '"num_hidden_layers": 1e400'),
    "not_object": "[1, 2, 3]",
}
RECIPES = {
    "sleeper": "echo trainer.nnodes=1\nsleep 600\n",
    "failer": "echo 'first line' >&2\necho 'SP_SIZE must divide 8' >&2\nexit 3\n",
    "garbled": "printf 'trainer.nnodes=\\xff\\xfe\\n'\n",
    "zero_gpus": "echo python3 -m x\necho trainer.n_gpus_per_node=0\n",
    "null_train_files": "echo data.train_files=null\n",
    "number_train_files": "echo 'data.train_files=[1, 2]'\n",
    "string_train_files": "echo data.train_files=abc.parquet\necho \"data.val_files='v.parquet'\"\n",
    "hydra_train_files": "echo 'data.train_files=[a.parquet,b.parquet]'\n",
}


@pytest.fixture
def files(tmp_path, monkeypatch):
    """Paths by name: the base overrides, broken files, model configs and recipes; run from an empty folder."""
    monkeypatch.chdir(tmp_path)  # no default recipe here: only what a case passes is read
    monkeypatch.setattr(plan_cli, "DRY_RUN_TIMEOUT_S", 1.0)
    paths = {"tmp": tmp_path, "base": tmp_path / "base.txt", "latin1": tmp_path / "latin1.txt",
             "nan_file": tmp_path / "nan.txt", "missing": tmp_path / "missing.txt"}
    paths["base"].write_text(BASE)
    paths["latin1"].write_bytes(b"trainer.nnodes=1\ndata.train_batch_size=64 \xe9t\xe9\n")
    paths["nan_file"].write_text(BASE + "trainer.nnodes=nan\n")
    for name, config in CONFIGS.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(config))
    for name, text in RAW_CONFIGS.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(text)
    paths["config_latin1"] = tmp_path / "latin1.json"
    paths["config_latin1"].write_bytes(b'{\n "name": "caf\xe9"\n}')
    for name, text in RECIPES.items():
        paths[name] = tmp_path / f"{name}.sh"
        paths[name].write_text(text)
    return paths


PLAN_ERRORS = [  # (id, arguments after --overrides BASE, what the error line names)
    ("zero-gpus", _set("trainer.n_gpus_per_node=0"), "trainer.n_gpus_per_node=0: a whole number from 1"),
    ("zero-tp", _set(f"{TP}=0"), f"{TP}=0: a whole number from 1"),
    ("tp-not-dividing", _set(f"{TP}=3"), f"{TP}=3: a divisor of the 8 GPUs"),
    ("nnodes-null", _set("trainer.nnodes=null"), "trainer.nnodes=null: a whole number"),
    ("nnodes-negative", _set("trainer.nnodes=-1"), "trainer.nnodes=-1:"),
    ("nnodes-text", _set("trainer.nnodes=two"), "trainer.nnodes=two:"),
    ("nnodes-fraction", _set("trainer.nnodes=1.5"), "trainer.nnodes=1.5:"),
    ("nnodes-empty", _set("trainer.nnodes="), "trainer.nnodes=:"),
    ("nnodes-huge", _set("trainer.nnodes=10000000000"), "trainer.nnodes=10000000000: a whole number from 1 to 1,000,"),
    ("nnodes-5000-digits", _set("trainer.nnodes=" + "9" * 5000), "trainer.nnodes=999"),
    ("nnodes-control-chars", _set("trainer.nnodes=\x1b[31m1"), "trainer.nnodes=\\x1b[31m1:"),
    ("problems-and-group-negative", _set("data.train_batch_size=-64", "actor_rollout_ref.rollout.n=-8"),
     "data.train_batch_size=-64:"),
    ("group-negative", _set("actor_rollout_ref.rollout.n=-8"), "actor_rollout_ref.rollout.n=-8:"),
    ("util-2.5", _set(f"{UTIL}=2.5"), f"{UTIL}=2.5: a finite number greater than 0 and at most 1"),
    ("util-zero", _set(f"{UTIL}=0"), f"{UTIL}=0:"),
    ("util-negative", _set(f"{UTIL}=-0.1"), f"{UTIL}=-0.1:"),
    ("util-nan", _set(f"{UTIL}=nan"), f"{UTIL}=nan:"),
    ("util-inf", _set(f"{UTIL}=inf"), f"{UTIL}=inf:"),
    ("util-text", _set(f"{UTIL}=half"), f"{UTIL}=half:"),
    ("util-null", _set(f"{UTIL}=null"), f"{UTIL}=null:"),
    ("prompt-nan", _set("data.max_prompt_length=nan"), "data.max_prompt_length=nan:"),
    ("response-inf", _set("data.max_response_length=inf"), "data.max_response_length=inf:"),
    ("tokens-per-gpu-1e308", _set("actor_rollout_ref.actor.ppo_max_token_len_per_gpu=1e308"),
     "ppo_max_token_len_per_gpu=1e308:"),
    ("sp-zero", _set("actor_rollout_ref.actor.ulysses_sequence_parallel_size=0"), "ulysses_sequence_parallel_size=0:"),
    ("judge-samples-zero", _set("+reward.reward_kwargs.samples=0"), "reward.reward_kwargs.samples=0:"),
    ("turns-negative", _set("+pearl.agent.max_tutor_turns=-3"), "pearl.agent.max_tutor_turns=-3:"),
    ("turn-tokens-zero", _set("+pearl.agent.max_tokens_per_turn=0"),
     "pearl.agent.max_tokens_per_turn=0: a whole number from 1 to 1,000,000,000, or null"),
    ("strategy-null", _set("actor_rollout_ref.actor.strategy=null"), "actor_rollout_ref.actor.strategy=null:"),
    ("set-without-equals", ["--set", "trainer.nnodes"], "--set trainer.nnodes: KEY=VALUE"),
    ("gpu-nan", ["--gpu", "nan"], "--gpu=nan:"),
    ("gpu-inf", ["--gpu", "inf"], "--gpu=inf:"),
    ("gpu-zero", ["--gpu", "0"], "--gpu=0:"),
    ("gpu-negative", ["--gpu=-80"], "--gpu=-80:"),
    ("gpu-unknown-name", ["--gpu", "tpu"], "--gpu 'tpu' is neither"),
    ("avg-turns-nan", ["--avg-tutor-turns", "nan"], "--avg-tutor-turns=nan:"),
    ("rate-negative", ["--tutor-tokens-per-s-per-gpu=-100"], "--tutor-tokens-per-s-per-gpu=-100.0:"),
    ("rate-zero", ["--student-tokens-per-s-per-replica", "0"], "--student-tokens-per-s-per-replica=0.0:"),
    ("rate-inf", ["--judge-tokens-per-s-per-replica", "inf"], "--judge-tokens-per-s-per-replica=inf:"),
    ("server-util-1.5", ["--server-gpu-memory-utilization", "1.5"], "--server-gpu-memory-utilization=1.5:"),
    ("overhead-negative", ["--vllm-overhead-gb=-1"], "--vllm-overhead-gb=-1.0: a finite number from 0"),
    ("int-flag-zero", ["--tutor-tokens-per-turn", "0"], "--tutor-tokens-per-turn=0:"),
    ("int-flag-huge", ["--judge-gpus-per-replica", "1" + "0" * 30], "--judge-gpus-per-replica=1000"),
    ("int-flag-text", ["--tutor-tokens-per-turn", "abc"], "argument --tutor-tokens-per-turn: invalid int value"),
    ("config-bad-json", ["--tutor-model", "{bad_json}"], "{bad_json}:3: is not valid JSON"),
    ("config-not-utf8", ["--tutor-model", "{config_latin1}"], "{config_latin1}:2: is not UTF-8"),
    ("config-not-object", ["--tutor-model", "{not_object}"], "{not_object}: is not a JSON object"),
    ("config-zero-heads", ["--tutor-model", "{zero_heads}"], "{zero_heads}: num_attention_heads=0: a whole number"),
    ("config-text-hidden", ["--judge-model", "{text_hidden}"], "{text_hidden}: hidden_size=\"4096\":"),
    ("config-null-vocab", ["--student-model", "{null_vocab}"], "{null_vocab}: vocab_size=null:"),
    ("config-bool-layers", ["--tutor-model", "{bool_layers}"], "{bool_layers}: num_hidden_layers=true:"),
    ("config-nan-layers", ["--tutor-model", "{nan_layers}"], "{nan_layers}: num_hidden_layers=nan:"),
    ("config-inf-layers", ["--tutor-model", "{inf_layers}"], "{inf_layers}: num_hidden_layers=inf:"),
    ("config-negative-kv-heads", ["--tutor-model", "{negative_kv}"], "{negative_kv}: num_key_value_heads=-8:"),
    ("config-hidden-below-heads", ["--tutor-model", "{hidden_below_heads}"],
     "{hidden_below_heads}: hidden_size=8: at least num_attention_heads (64)"),
    ("config-experts-per-token", ["--tutor-model", "{too_many_per_token}"],
     "{too_many_per_token}: num_experts_per_tok=5: a whole number from 1 to num_experts (4)"),
    ("config-tied-text", ["--tutor-model", "{tied_text}"], "{tied_text}: tie_word_embeddings=yes: true, false"),
    ("config-missing-field", ["--tutor-model", "{no_vocab}"], "{no_vocab} has no field 'vocab_size'"),
    ("model-name-too-long", ["--tutor-model", "a" * 300], "is neither one of"),
]
FILE_ERRORS = [  # (id, arguments, what the error line names): the overrides come from elsewhere than BASE
    ("overrides-not-utf8", ["--overrides", "{latin1}"], "{latin1}:2: is not UTF-8 text"),
    ("overrides-a-folder", ["--overrides", "{tmp}"], "--overrides {tmp} is no file"),
    ("overrides-missing", ["--overrides", "{missing}"], "--overrides {missing} is no file"),
    ("overrides-nan-in-file", ["--overrides", "{nan_file}"], "trainer.nnodes=nan:"),
    ("recipe-never-ends", ["--recipe", "{sleeper}"], "recipe {sleeper} did not finish its --dry-run within 1 s"),
    ("recipe-fails", ["--recipe", "{failer}"], "--dry-run failed (exit 3): SP_SIZE must divide 8"),
    ("recipe-prints-non-utf8", ["--recipe", "{garbled}"], "trainer.nnodes=\ufffd\ufffd:"),
    ("recipe-missing", ["--recipe", "{missing}"], "--recipe {missing} is no file"),
    ("no-recipe-at-all", [], "no recipe"),
]
LEGAL = [  # (id, arguments after --overrides BASE, exit codes allowed: 0 fits, 1 does not fit)
    ("base", [], {0}),
    ("two-nodes", _set("trainer.nnodes=2"), {0}),
    ("util-exactly-1", _set(f"{UTIL}=1"), {0, 1}),
    ("turn-tokens-null", _set("+pearl.agent.max_tokens_per_turn=null"), {0}),
    ("plus-prefixed", _set("+trainer.nnodes=1"), {0}),
    ("gpu-as-number", ["--gpu", "141"], {0}),
    ("h100-does-not-fit", ["--gpu", "h100"], {1}),
    ("no-overhead", ["--vllm-overhead-gb", "0"], {0}),
]


def _run(argv, capsys):
    """``pearl-verl ARGV`` in this process: (exit code, stdout + stderr)."""
    try:
        code = cli.main(argv, modules=MODULES)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out + err


def _one_error(code, output, names):
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if "error:" in line]
    assert code == 2 and len(errors) == 1, output[-2000:]
    assert names in errors[0] and len(errors[0]) < 400, errors[0]


@pytest.mark.parametrize(("args", "names"), [c[1:] for c in PLAN_ERRORS], ids=[c[0] for c in PLAN_ERRORS])
def test_plan_refuses_a_bad_value_in_one_line(files, capsys, args, names):
    args = [a.format(**files) for a in args]
    _one_error(*_run(["plan", "--overrides", str(files["base"]), *args], capsys), names.format(**files))


@pytest.mark.parametrize(("args", "names"), [c[1:] for c in FILE_ERRORS], ids=[c[0] for c in FILE_ERRORS])
def test_plan_refuses_a_bad_file_or_recipe_in_one_line(files, capsys, args, names):
    start = time.monotonic()
    _one_error(*_run(["plan", *[a.format(**files) for a in args]], capsys), names.format(**files))
    assert time.monotonic() - start < 20  # the hanging recipe is cut at the (test's) 1 s timeout


@pytest.mark.parametrize(("args", "codes"), [c[1:] for c in LEGAL], ids=[c[0] for c in LEGAL])
def test_plan_takes_legal_edge_values(files, capsys, args, codes):
    code, output = _run(["plan", "--overrides", str(files["base"]), *args], capsys)
    assert code in codes and "error:" not in output and "Traceback" not in output, output[-2000:]


DOCTOR_ERRORS = [
    ("zero-gpus", ["--recipe", "{zero_gpus}"], "trainer.n_gpus_per_node=0: a whole number from 1"),
    ("recipe-never-ends", ["--recipe", "{sleeper}"], "recipe {sleeper} did not finish its --dry-run within 1 s"),
    ("recipe-fails", ["--recipe", "{failer}"], "--dry-run failed (exit 3)"),
    ("train-files-null", ["--recipe", "{null_train_files}"], "data.train_files=null: a parquet path or a list"),
    ("train-files-numbers", ["--recipe", "{number_train_files}"], "data.train_files=[1, 2]: a parquet path"),
    ("zero-heads-model", ["--recipe", "{string_train_files}", "--tutor-model", "{zero_heads}"],
     "num_attention_heads=0:"),
]


@pytest.mark.parametrize(("args", "names"), [c[1:] for c in DOCTOR_ERRORS], ids=[c[0] for c in DOCTOR_ERRORS])
def test_doctor_cluster_refuses_a_bad_recipe_in_one_line(files, capsys, args, names):
    _one_error(*_run(["doctor", "--cluster", *[a.format(**files) for a in args]], capsys), names.format(**files))


@pytest.mark.parametrize(("recipe", "data"), [("string_train_files", ["abc.parquet", "v.parquet"]),
                                              ("hydra_train_files", ["a.parquet", "b.parquet"])])
def test_doctor_cluster_checks_a_plain_string_data_path_as_one_file(files, capsys, recipe, data):
    code, output = _run(["doctor", "--cluster", "--json", "--recipe", str(files[recipe])], capsys)
    assert code == 1 and "Traceback" not in output  # no GPU, no endpoints, no such files: failed checks, no error
    checks = [c["name"] for c in json.loads(output)]
    assert [c for c in checks if c.startswith("data ")] == [f"data {path}" for path in data]


def test_data_paths_takes_a_path_or_a_list():
    assert data_paths("k", "/d/train.parquet") == ["/d/train.parquet"]
    assert data_paths("k", "'abc.parquet'") == ["abc.parquet"]
    assert data_paths("k", "['a.parquet', 'b.parquet']") == ["a.parquet", "b.parquet"]
    assert data_paths("k", "[a.parquet, 'b.parquet']") == ["a.parquet", "b.parquet"]
    for bad in ("", "null", "[1, 2]", "{'a': 1}", "[[a]]", "12", "['']"):
        with pytest.raises(InputError, match="^k="):
            data_paths("k", bad)


def test_every_assumption_has_a_declared_range():
    assert set(ASSUMPTION_RANGES) == set(Assumptions.__dataclass_fields__)
