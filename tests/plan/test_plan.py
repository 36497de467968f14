"""The capacity plan: hand-computed parts, the shipped recipe's verdicts, the command."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from pearl_verl import cli
from pearl_verl.judge.judge_config import JudgeConfig
from pearl_verl.pearl_config import AgentConfig
from pearl_verl.plan.capacity import (
    Assumptions,
    RecipeSettings,
    kv_capacity_tokens,
    make_plan,
    settings_from_overrides,
    step_tokens,
    training_memory,
)
from pearl_verl.plan.model_specs import ModelSpec, model_spec
from pearl_verl.plan.plan_cli import composed_settings, recipe_overrides
from pearl_verl.verl_plugin.config import compose_config

RECIPES = Path(__file__).resolve().parents[2] / "recipes" / "pearl"
TOY = ModelSpec("toy", hidden=8, layers=2, heads=2, kv_heads=1, head_dim=4, intermediate=16, vocab=10)


def test_training_memory_by_hand():
    recipe = RecipeSettings(nnodes=1, gpus_per_node=2, ppo_max_token_len_per_gpu=100)
    parts = training_memory(TOY, recipe)
    assert parts["states"] == 16 * TOY.params / 2
    assert parts["gathered_layers"] == 2 * 600 * 2
    assert parts["checkpoints"] == 2 * 100 * 8 * 2
    # per token: 4h + 2q + 2kv + 3w = 32 + 16 + 8 + 48 = 104 elements; activations and their gradients in bf16
    assert parts["layer_recompute"] == 2 * 100 * 104 * 2
    assert parts["logits"] == 2 * 100 * 10 * 4
    assert parts["total"] == pytest.approx(sum(v for k, v in parts.items() if k != "total"))


def test_kv_capacity_by_hand():
    spec = model_spec("qwen3-30b-a3b")
    free = 0.6 * 141e9 - 2 * spec.params / 4 - 4e9
    assert kv_capacity_tokens(spec, 141, 0.6, 4, 4) == int(free // 24576)
    assert kv_capacity_tokens(spec, 40, 0.5, 1, 4) == 0  # the weights alone overflow: no room, not a negative


def test_step_tokens_by_hand():
    recipe = RecipeSettings(train_batch_size=2, rollout_n=3, judge_samples=2)
    a = Assumptions(avg_tutor_turns=4, tutor_tokens_per_turn=10, student_tokens_per_turn=5, student_calls_per_turn=2,
                    student_system_tokens=100, judge_rubric_tokens=1000, judge_output_tokens=50)
    tokens = step_tokens(recipe, a)
    dialogue = 600 + 4 * 15
    assert (tokens.dialogues, tokens.tutor_output, tokens.student_output) == (6, 6 * 4 * 10, 6 * 4 * 5)
    assert tokens.student_calls == 6 * 4 * 2 and tokens.student_prompt == 48 * (100 + dialogue / 2)
    assert (tokens.judge_calls, tokens.judge_output, tokens.judge_prompt) == (12, 600, 12 * (1000 + dialogue))


def test_the_shipped_recipe_fits_8_h200_and_names_its_bottleneck():
    recipe = settings_from_overrides(recipe_overrides(RECIPES / "run_qwen3_30b_a3b_pearl_gspo_fsdp.sh", None, []))
    assert (recipe.gpus, recipe.dialogues, recipe.rollout_tp, recipe.sequence_parallel) == (8, 512, 4, 2)
    assert (recipe.max_tutor_turns, recipe.max_tokens_per_turn, recipe.engine) == (15, 6144, "fsdp2")
    tutor, judge = model_spec("qwen3-30b-a3b"), model_spec("qwen3-32b")
    h200 = make_plan(tutor, tutor, judge, recipe, Assumptions(gpu_memory_gb=141))
    assert h200.fits and 90e9 < h200.training["total"] < 141e9
    assert h200.rollout["fraction_typical"] == 1 and h200.rollout["fraction_at_full_length"] < 1
    assert any(v.startswith("bottleneck: the rollout's KV cache") for v in h200.verdicts)
    # one student replica on one 80 GB GPU keeps too few dialogues in its cache for a 512-dialogue step
    assert h200.servers["student"]["requests_in_kv_per_replica"] < 32
    h100 = make_plan(tutor, tutor, judge, recipe, Assumptions(gpu_memory_gb=80))
    assert not h100.fits and "actor update does NOT fit" in h100.verdicts[0] and "states" in h100.verdicts[0]


def test_more_gpus_shrink_the_states_and_need_faster_servers():
    base = RecipeSettings(rollout_tp=4, ppo_max_token_len_per_gpu=8192)
    double = RecipeSettings(nnodes=2, rollout_tp=4, ppo_max_token_len_per_gpu=8192)
    tutor, judge = model_spec("qwen3-30b-a3b"), model_spec("qwen3-32b")
    one, two = (make_plan(tutor, tutor, judge, r, Assumptions()) for r in (base, double))
    assert two.training["states"] == pytest.approx(one.training["states"] / 2)
    assert two.servers["judge"]["tokens_per_s_needed"] == pytest.approx(2 * one.servers["judge"]["tokens_per_s_needed"])
    needed = one.servers["judge"]["tokens_per_s_needed"]
    assert one.servers["judge"]["replicas_needed"] == math.ceil(needed / Assumptions().judge_tokens_per_s_per_replica)


def test_overrides_parse_plus_keys_nulls_and_megatron():
    recipe = settings_from_overrides(["+pearl.agent.max_tutor_turns=9", "pearl.agent.max_tokens_per_turn=null",
                                      "model_engine=megatron", "python3", "trainer.nnodes=2"])
    assert (recipe.max_tutor_turns, recipe.max_tokens_per_turn) == (9, None)
    assert (recipe.engine, recipe.nnodes) == ("megatron", 2)
    with pytest.raises(ValueError, match="^trainer.nnodes=two: a whole number from 1 to"):
        settings_from_overrides(["trainer.nnodes=two"])


def test_plan_command_prints_the_verdict_and_exits_1_when_it_does_not_fit(capsys):
    recipe = str(RECIPES / "run_qwen3_30b_a3b_pearl_gspo_fsdp.sh")
    assert cli.main(["plan", "--recipe", recipe]) == 0
    out = capsys.readouterr().out
    assert "actor update fits" in out and "bottleneck:" in out and out.rstrip().endswith("fits")
    assert cli.main(["plan", "--recipe", recipe, "--gpu", "h100", "--json"]) == 1
    plan = json.loads(capsys.readouterr().out)
    assert plan["fits"] is False and plan["recipe"]["train_batch_size"] == 64
    assert cli.main(["plan", "--recipe", recipe, "--gpu", "tpu"]) == 2
    assert "--gpu 'tpu' is neither" in capsys.readouterr().err


def test_the_plan_reads_the_config_the_recipe_composes_to():
    # What the command leaves out is what the run gets: verl's ppo_trainer value, PEARL's YAML, the method's default.
    lines = ["python3", "-m", "pearl_verl.verl_plugin.main_ppo", "--config-name=pearl_gspo", "trainer.nnodes=2"]
    settings, composed = composed_settings(lines), compose_config("pearl_gspo", ["trainer.nnodes=2"])
    assert settings.nnodes == 2
    assert (settings.train_batch_size, settings.rollout_n) == (composed.data.train_batch_size,
                                                               composed.actor_rollout_ref.rollout.n)
    assert settings.max_tutor_turns == AgentConfig().max_tutor_turns and settings.judge_samples == JudgeConfig.samples
    # the last of a key wins, and a + on a key the config has already is no error
    turns = composed_settings([*lines, "+pearl.agent.max_tutor_turns=9", "+pearl.agent.max_tutor_turns=7"])
    assert turns.max_tutor_turns == 7
    assert composed_settings([*lines, "+trainer.nnodes=3"]).nnodes == 3
    with pytest.raises(ValueError, match="do not compose into a verl config"):
        composed_settings(["--config-name=pearl_gspo", "data.train_files=[a,"])


def test_reading_a_recipes_config_imports_neither_verl_nor_torch():
    code = ("import sys; from pearl_verl.plan.plan_cli import composed_settings; "
            "s = composed_settings(['--config-name=pearl_gspo', 'trainer.nnodes=2']); "
            "print(s.nnodes, 'verl' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["2", "False", "False"]
