"""Each recipe's Hydra overrides compose with verl's config and pass verl's validation on CPU.

A typo in a recipe (a key verl does not know, a bad value) fails here, not on a GPU cluster.
"""

import os
import subprocess
from pathlib import Path

import pytest
from verl.trainer.config import AlgoConfig
from verl.utils.config import omega_conf_to_dataclass

from pearl_verl.verl_plugin.main_ppo import prepare

RECIPES = Path(__file__).resolve().parents[2] / "recipes" / "pearl"


def recipe_overrides(script: Path, tmp_path: Path, **env: str) -> list[str]:
    """The Hydra overrides a recipe passes to verl, read from its ``--dry-run`` output."""
    proc = subprocess.run(
        ["bash", str(script), "--dry-run"], capture_output=True, text=True, check=True,
        env={**os.environ, "DATA_DIR": str(tmp_path), "MODEL_PATH": str(tmp_path / "model"), **env},
    )
    command = proc.stdout.splitlines()
    assert command[:3] == ["python3", "-m", "pearl_verl.verl_plugin.main_ppo"], command[:3]
    return command[3:]


def _check_paper_gspo(cfg):
    """The paper's GSPO: sequence-level ratio and aggregation, tiny asymmetric clip, no KL, lr 1e-6, G = 8."""
    actor = cfg.actor_rollout_ref.actor
    assert actor.policy_loss.loss_mode == "gspo" and actor.loss_agg_mode == "seq-mean-token-mean"
    assert (actor.clip_ratio_low, actor.clip_ratio_high) == (3e-4, 4e-4) and actor.use_kl_loss is False
    assert actor.optim.lr == 1e-6 and not cfg.algorithm.use_kl_in_reward
    rollout = cfg.actor_rollout_ref.rollout
    assert rollout.n == 8 and rollout.temperature == 1.0


@pytest.mark.parametrize(("recipe", "engine"), [
    ("run_qwen3_30b_a3b_pearl_gspo_fsdp.sh", "fsdp2"),
    ("run_qwen3_30b_a3b_pearl_gspo_megatron.sh", "megatron"),
])
def test_full_pearl_recipes_compose_and_validate(verl_config, tmp_path, recipe, engine):
    overrides = recipe_overrides(RECIPES / recipe, tmp_path)
    cfg = verl_config(overrides)
    prepare(cfg)  # registrations, pearl section (student endpoint, agent), KL check, verl's validate_config
    _check_paper_gspo(cfg)
    assert cfg.actor_rollout_ref.actor.strategy == engine
    assert cfg.algorithm.adv_estimator == "pearl" and cfg.trainer.v1.trainer_mode == "pearl_sync"
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "pearl_tutor"
    assert cfg.reward.reward_manager.name == "pearl_judge" and cfg.reward.reward_kwargs.backend == "llm"
    from pearl_verl.judge.config import judge_config_from_mapping
    from pearl_verl.verl_plugin.estimator import pearl_config_from_root

    pearl = pearl_config_from_root(cfg)
    assert pearl.advantage.gamma == 0.98 and pearl.agent.max_tutor_turns == 15
    assert pearl.student.backend == "llm" and pearl.student.base_url == "http://localhost:8001/v1"
    judge = judge_config_from_mapping(dict(cfg.reward.reward_kwargs))
    assert judge.base_url == "http://localhost:8000/v1" and judge.temperature == 0.3
    # vLLM serves both: the planner's and the judge's JSON are held to their schemas
    assert pearl.student.structured_output == judge.structured_output == "json_schema"
    assert judge.endpoint().structured_output == "json_schema"
    if engine == "megatron":
        assert cfg.actor_rollout_ref.actor.megatron.expert_model_parallel_size == 8
        assert cfg.actor_rollout_ref.actor.megatron.router_replay.mode == "R2"


def test_serve_student_recipe_prints_the_vllm_command():
    proc = subprocess.run(["bash", str(RECIPES / "serve_student.sh"), "--dry-run"], capture_output=True, text=True, check=True)
    command = proc.stdout.splitlines()
    assert command[:3] == ["vllm", "serve", "Qwen/Qwen3-30B-A3B-Instruct-2507"]
    assert "--enable-prefix-caching" in command and command[command.index("--served-model-name") + 1] == "pearl-student"


def test_endpoint_check_fails_early_with_the_fix(tmp_path):
    proc = subprocess.run(
        ["bash", str(RECIPES / "run_qwen3_30b_a3b_pearl_gspo_fsdp.sh")], capture_output=True, text=True,
        env={**os.environ, "STUDENT_BASE_URL": "http://127.0.0.1:9/v1", "DATA_DIR": str(tmp_path)},
    )
    assert proc.returncode == 1
    assert "the student endpoint http://127.0.0.1:9/v1 is not reachable" in proc.stderr
    assert "recipes/pearl/serve_student.sh" in proc.stderr


def test_gspo_fsdp_recipe_composes_and_validates(verl_config, tmp_path):
    overrides = recipe_overrides(RECIPES / "run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh", tmp_path)
    cfg = verl_config(overrides)
    prepare(cfg)  # registrations, pearl section, KL check, verl's validate_config
    algo = omega_conf_to_dataclass(cfg.algorithm)  # verl rejects unknown algorithm keys here
    assert isinstance(algo, AlgoConfig) and algo.adv_estimator == "pearl" and not algo.use_kl_in_reward
    actor = cfg.actor_rollout_ref.actor
    # The paper's GSPO: sequence-level ratio and aggregation, tiny asymmetric clip, no KL.
    assert actor.policy_loss.loss_mode == "gspo"
    assert actor.loss_agg_mode == "seq-mean-token-mean"
    assert (actor.clip_ratio_low, actor.clip_ratio_high) == (3e-4, 4e-4)
    assert actor.use_kl_loss is False and actor.strategy == "fsdp2"
    assert cfg.actor_rollout_ref.rollout.n == 8 and cfg.actor_rollout_ref.rollout.temperature == 1.0
    assert cfg.pearl.advantage.gamma == 0.98
    assert cfg.data.train_files == [str(tmp_path / "gsm8k/train.parquet"), str(tmp_path / "math/train.parquet")]


def test_recipe_typo_fails_before_any_gpu_is_touched(verl_config, tmp_path):
    overrides = recipe_overrides(RECIPES / "run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh", tmp_path)
    with pytest.raises(ValueError, match=r"Unknown setting pearl\.advantage\.gama"):
        prepare(verl_config([*overrides, "+pearl.advantage.gama=0.9"]))


def test_recipe_passes_extra_overrides_through(tmp_path):
    script = RECIPES / "run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh"
    proc = subprocess.run(
        ["bash", str(script), "--dry-run", "trainer.total_epochs=1"], capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[-1] == "trainer.total_epochs=1"


def test_fsdp_and_megatron_recipes_differ_only_in_their_engine(tmp_path):
    """The PEARL settings live in recipes/pearl/lib/: the two engines' recipes cannot drift apart."""
    engine_keys = ("model_engine=", "trainer.experiment_name=", "actor_rollout_ref.actor.strategy=",
                   "actor_rollout_ref.actor.fsdp_config.", "actor_rollout_ref.actor.ulysses_sequence_parallel_size=",
                   "actor_rollout_ref.actor.megatron.", "+actor_rollout_ref.actor.megatron.",
                   "actor_rollout_ref.ref.megatron.")

    def shared(recipe: str, **env: str) -> set[str]:
        overrides = recipe_overrides(RECIPES / recipe, tmp_path, **env)
        return {o for o in overrides if not o.startswith(engine_keys)}

    fsdp = shared("run_qwen3_30b_a3b_pearl_gspo_fsdp.sh", STUDENT_MODEL="s1", ROLLOUT_N="16")
    megatron = shared("run_qwen3_30b_a3b_pearl_gspo_megatron.sh", STUDENT_MODEL="s1", ROLLOUT_N="16")
    assert fsdp == megatron
    assert "+pearl.student.model=s1" in fsdp and "actor_rollout_ref.rollout.n=16" in fsdp
    assert len(fsdp) > 40  # the shared block, not an empty set


@pytest.mark.parametrize("served", [False, True])
def test_one_gpu_smoke_recipe_composes_with_the_whole_stack(verl_config, tmp_path, served):
    env = {"OUT_DIR": str(tmp_path / "smoke")}
    if served:
        env |= {"STUDENT_BASE_URL": "http://s:8001/v1", "JUDGE_BASE_URL": "http://j:8000/v1"}
    overrides = recipe_overrides(RECIPES / "smoke_1gpu.sh", tmp_path, **env)
    assert len({o.split("=", 1)[0] for o in overrides}) == len(overrides)  # no key set twice
    cfg = verl_config(overrides)
    prepare(cfg)
    actor = cfg.actor_rollout_ref.actor
    assert actor.policy_loss.loss_mode == "gspo" and actor.loss_agg_mode == "seq-mean-token-mean"
    assert actor.optim.lr == 1e-5  # 10x the paper's, so 3 steps move a 135M model's weights visibly
    assert cfg.trainer.n_gpus_per_node == 1 and cfg.trainer.total_training_steps == 3 and cfg.trainer.save_freq == 3
    assert cfg.actor_rollout_ref.rollout.name == "vllm" and cfg.trainer.v1.trainer_mode == "pearl_sync"
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "pearl_tutor"
    assert "hf_model" in cfg.actor_rollout_ref.actor.checkpoint.save_contents and "file" in cfg.trainer.logger
    backend = "llm" if served else "offline"
    assert cfg.pearl.student.backend == backend and cfg.reward.reward_kwargs.backend == backend
    if served:
        assert cfg.reward.reward_kwargs.base_url == "http://j:8000/v1" and cfg.pearl.student.model == "pearl-student"


# What a CPU run changes against the cluster recipe: where it runs (device, engine, Ray slots, workers),
# the rollout backend, the sizes, the endpoints (offline stand-ins), and where its files go.
CPU_RECIPE_KEYS = (
    "trainer.device=", "+ray_kwargs.", "ray_kwargs.", "transfer_queue.", "actor_rollout_ref.rollout.agent.num_workers=",
    "reward.num_workers=", "data.dataloader_num_workers=", "actor_rollout_ref.actor.fsdp_config.",
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size=", "actor_rollout_ref.model.use_remove_padding=",
    "actor_rollout_ref.model.enable_gradient_checkpointing=", "+actor_rollout_ref.model.override_config.",
    "actor_rollout_ref.rollout.name=", "actor_rollout_ref.rollout.dtype=", "actor_rollout_ref.rollout.seed=",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=", "actor_rollout_ref.rollout.top_k=",
    "actor_rollout_ref.rollout.val_kwargs.", "data.train_batch_size=", "data.max_prompt_length=",
    "data.max_response_length=", "actor_rollout_ref.actor.ppo_mini_batch_size=",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=", "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=",
    "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=", "actor_rollout_ref.rollout.n=", "trainer.n_gpus_per_node=",
    "+pearl.agent.max_tutor_turns=", "+pearl.agent.max_tokens_per_turn=", "actor_rollout_ref.actor.optim.lr=",
    "+pearl.student.", "+reward.reward_kwargs.", "actor_rollout_ref.model.path=", "data.train_files=", "data.val_files=",
    "data.seed=", "actor_rollout_ref.actor.data_loader_seed=", "trainer.experiment_name=", "trainer.logger=",
    "trainer.default_local_dir=", "trainer.rollout_data_dir=", "trainer.save_freq=", "trainer.test_freq=",
    "trainer.total_training_steps=", "trainer.val_before_train=", "actor_rollout_ref.actor.checkpoint.save_contents=",
)


def test_cpu_recipe_is_the_fsdp2_recipe_outside_device_engine_rollout_and_sizes(tmp_path):
    def shared(recipe: str) -> set[str]:
        return {o for o in recipe_overrides(RECIPES / recipe, tmp_path) if not o.startswith(CPU_RECIPE_KEYS)}

    cpu, fsdp = shared("run_cpu_pearl_gspo.sh"), shared("run_qwen3_30b_a3b_pearl_gspo_fsdp.sh")
    assert cpu == fsdp
    for key in ("actor_rollout_ref.actor.policy_loss.loss_mode=gspo", "algorithm.adv_estimator=pearl",
                "trainer.v1.trainer_mode=pearl_sync", "reward.reward_manager.name=pearl_judge",
                "actor_rollout_ref.rollout.agent.default_agent_loop=pearl_tutor", "actor_rollout_ref.actor.strategy=fsdp2"):
        assert key in cpu  # the shared block is the method, not an empty set


def test_cpu_recipe_composes_and_validates_with_the_cpu_parts(verl_config, tmp_path):
    overrides = recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path)
    assert len({o.split("=", 1)[0] for o in overrides}) == len(overrides)  # no key set twice
    cfg = verl_config(overrides)
    assert cfg.actor_rollout_ref.rollout.name == "hf" and cfg.trainer.device == "cpu"
    prepare(cfg)  # (in this process verl's platform is not the CPU one, so prepare sets the device to its own)
    assert cfg.ray_kwargs.ray_init.num_gpus == cfg.trainer.n_gpus_per_node == 1  # logical GPUs for Ray's placement
    assert cfg.reward.reward_kwargs.backend == "offline" and cfg.pearl.student.backend == "offline"
    served = recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, JUDGE_BASE_URL="http://j:8000/v1",
                              JUDGE_MODEL="judge", TUTOR="smollm2")
    assert "+reward.reward_kwargs.base_url=http://j:8000/v1" in served and "+reward.reward_kwargs.backend=llm" in served
    assert f"actor_rollout_ref.model.path={tmp_path / 'model'}" in served  # MODEL_PATH wins over TUTOR's default


def test_cpu_recipe_on_vllm_composes_with_the_settings_train_local_uses(verl_config, tmp_path):
    """ROLLOUT_NAME=vllm: verl's own rollout with vLLM's CPU settings, the same ones as train-local --rollout vllm."""
    from pearl_verl.train_local.verl_run import VLLM_CPU_OVERRIDES

    overrides = recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, ROLLOUT_NAME="vllm", WEIGHT_BUCKET_MB="1")
    assert len({o.split("=", 1)[0] for o in overrides}) == len(overrides)  # no key set twice
    assert set(VLLM_CPU_OVERRIDES) <= set(overrides)
    cfg = verl_config(overrides)
    rollout = cfg.actor_rollout_ref.rollout
    assert rollout.name == "vllm" and rollout.enforce_eager and not rollout.free_cache_engine
    assert rollout.enable_sleep_mode is False and rollout.checkpoint_engine.update_weights_bucket_megabytes == 1
    hf = {o for o in recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path)}
    extra = set(overrides) - hf  # the rollout and its CPU settings, nothing else
    assert {o.split("=", 1)[0] for o in extra} == {"actor_rollout_ref.rollout.name", *(o.split("=", 1)[0] for o in
                                                   VLLM_CPU_OVERRIDES),
                                                   "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes"}
    bad = subprocess.run(["bash", str(RECIPES / "run_cpu_pearl_gspo.sh"), "--dry-run"], capture_output=True, text=True,
                         env={**os.environ, "DATA_DIR": str(tmp_path), "ROLLOUT_NAME": "sglang"})
    assert bad.returncode == 2 and "ROLLOUT_NAME=sglang: this recipe runs hf or vllm" in bad.stderr
