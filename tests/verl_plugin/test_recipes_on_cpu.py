"""Each recipe's Hydra overrides compose with verl's config and pass verl's validation on CPU.

A typo in a recipe (a key verl does not know, a bad value) fails here, not on a GPU cluster.
"""

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from verl.trainer.config import AlgoConfig
from verl.utils.config import omega_conf_to_dataclass

from pearl_verl.errors import InputError
from pearl_verl.pearl_config import load_pearl_config
from pearl_verl.verl_plugin import config as config_module
from pearl_verl.verl_plugin.config import PEARL_GSPO_CPU, PEARL_SFT, PEARL_SFT_CPU, compose_config, config_flags
from pearl_verl.verl_plugin.main_ppo import prepare

RECIPES = Path(__file__).resolve().parents[2] / "recipes" / "pearl"


def recipe_command(script: Path, tmp_path: Path, **env: str) -> tuple[str, list[str]]:
    """The PEARL config a recipe starts from and the Hydra overrides it adds, read from its ``--dry-run`` output."""
    proc = subprocess.run(
        ["bash", str(script), "--dry-run"], capture_output=True, text=True, check=True,
        env={**os.environ, "DATA_DIR": str(tmp_path), "MODEL_PATH": str(tmp_path / "model"), **env},
    )
    command = proc.stdout.splitlines()
    assert command[:3] == ["python3", "-m", "pearl_verl.verl_plugin.main_ppo"], command[:3]
    name = command[4].removeprefix("--config-name=")
    assert command[3:5] == config_flags(name), command[3:5]
    return name, command[5:]


def recipe_overrides(script: Path, tmp_path: Path, **env: str) -> list[str]:
    """The Hydra overrides a recipe adds to its PEARL config."""
    return recipe_command(script, tmp_path, **env)[1]


def recipe_config(script: Path, tmp_path: Path, *extra: str, **env: str):
    """The config a recipe's main_ppo runs with (its PEARL config, its overrides, then ``extra``)."""
    name, overrides = recipe_command(script, tmp_path, **env)
    return compose_config(name, [*overrides, *extra])


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
def test_full_pearl_recipes_compose_and_validate(tmp_path, recipe, engine):
    cfg = recipe_config(RECIPES / recipe, tmp_path)
    prepare(cfg)  # registrations, pearl section (student endpoint, agent), KL check, verl's validate_config
    _check_paper_gspo(cfg)
    assert cfg.actor_rollout_ref.actor.strategy == engine
    assert cfg.algorithm.adv_estimator == "pearl" and cfg.trainer.v1.trainer_mode == "pearl_sync"
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "pearl_tutor"
    assert cfg.reward.reward_manager.name == "pearl_judge" and cfg.reward.reward_kwargs.backend == "llm"
    from pearl_verl.judge.judge_config import judge_config_from_mapping
    from pearl_verl.verl_plugin.adv_estimator import pearl_config_from_root

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


def test_gspo_fsdp_recipe_composes_and_validates(tmp_path):
    cfg = recipe_config(RECIPES / "run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh", tmp_path)
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
    assert load_pearl_config(cfg.get("pearl")).advantage.gamma == 0.98
    assert cfg.data.train_files == [str(tmp_path / "gsm8k/train.parquet"), str(tmp_path / "math/train.parquet")]


def test_recipe_typo_fails_before_any_gpu_is_touched(tmp_path):
    cfg = recipe_config(RECIPES / "run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh", tmp_path, "+pearl.advantage.gama=0.9")
    with pytest.raises(ValueError, match=r"Unknown setting pearl\.advantage\.gama"):
        prepare(cfg)


def test_recipe_passes_extra_overrides_through(tmp_path):
    script = RECIPES / "run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh"
    proc = subprocess.run(
        ["bash", str(script), "--dry-run", "trainer.total_epochs=1"], capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[-1] == "trainer.total_epochs=1"


def test_fsdp_and_megatron_recipes_differ_only_in_their_engine(tmp_path):
    """The PEARL settings live in recipes/pearl/lib/ and the pearl_gspo config: the two engines' recipes cannot drift
    apart."""
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
    assert len(fsdp) > 25  # the shared block, not an empty set


@pytest.mark.parametrize("served", [False, True])
def test_one_gpu_smoke_recipe_composes_with_the_whole_stack(tmp_path, served):
    env = {"OUT_DIR": str(tmp_path / "smoke")}
    if served:
        env |= {"STUDENT_BASE_URL": "http://s:8001/v1", "JUDGE_BASE_URL": "http://j:8000/v1"}
    overrides = recipe_overrides(RECIPES / "smoke_1gpu.sh", tmp_path, **env)
    assert len({o.split("=", 1)[0] for o in overrides}) == len(overrides)  # no key set twice
    cfg = recipe_config(RECIPES / "smoke_1gpu.sh", tmp_path, **env)
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


# What may differ between two PEARL runs' composed configs (dotted paths, prefixes): where a run goes (device, engine,
# Ray slots, workers, precision), its rollout backend, its sizes and seeds, its learning rate and sampling, its
# endpoints (offline stand-ins or served), and where its files go. The method (GSPO's loss and clip, the pearl
# estimator, the agent loop, the judge reward, the trainer mode) is not here: it must be the same everywhere.
RUN_KEYS = (
    # device and engine
    "trainer.device", "trainer.n_gpus_per_node", "ray_kwargs.", "transfer_queue.", "actor_rollout_ref.rollout.agent.num_workers",
    "reward.num_workers", "data.dataloader_num_workers", "actor_rollout_ref.actor.fsdp_config.",
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size", "actor_rollout_ref.model.use_remove_padding",
    "actor_rollout_ref.model.enable_gradient_checkpointing", "actor_rollout_ref.model.override_config.",
    "actor_rollout_ref.actor.use_dynamic_bsz", "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz",
    "actor_rollout_ref.ref.log_prob_use_dynamic_bsz", "critic.use_dynamic_bsz",
    # rollout backend
    "actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.dtype", "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.gpu_memory_utilization", "actor_rollout_ref.rollout.top_k", "actor_rollout_ref.rollout.val_kwargs.",
    # sizes, seeds, learning rate, sampling temperature
    "pearl.agent.seed_turns",  # one seed, one set of dialogues: on a CPU, not on a GPU's vLLM sampler
    "data.train_batch_size", "data.max_prompt_length", "data.max_response_length", "data.seed",
    "actor_rollout_ref.actor.ppo_mini_batch_size", "critic.ppo_mini_batch_size", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
    "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu",
    "actor_rollout_ref.rollout.n", "actor_rollout_ref.rollout.prompt_length", "actor_rollout_ref.rollout.response_length",
    "actor_rollout_ref.rollout.seed", "actor_rollout_ref.actor.data_loader_seed", "actor_rollout_ref.actor.optim.lr",
    # the rate's schedule, sized to the run: train-local's cosine to a tenth over its 20 steps, the recipes' constant
    "actor_rollout_ref.actor.optim.lr_scheduler_type", "actor_rollout_ref.actor.optim.min_lr_ratio",
    "actor_rollout_ref.rollout.temperature", "pearl.agent.max_tutor_turns", "pearl.agent.max_tokens_per_turn",
    # endpoints
    "pearl.student.", "reward.reward_kwargs.",
    # the model, the data and the run's files, steps and logging
    "actor_rollout_ref.model.path", "data.train_files", "data.val_files", "trainer.experiment_name",
    "actor_rollout_ref.rollout.trace.experiment_name", "trainer.logger", "trainer.default_local_dir",
    "trainer.rollout_data_dir", "trainer.save_freq", "trainer.test_freq", "trainer.total_training_steps",
    "trainer.total_epochs", "trainer.val_before_train", "trainer.validation_data_dir",
    "data.validation_shuffle", "trainer.resume_mode", "trainer.resume_from_path",
    "actor_rollout_ref.actor.checkpoint.save_contents",
)
METHOD = {
    "actor_rollout_ref.actor.policy_loss.loss_mode": "gspo", "actor_rollout_ref.actor.loss_agg_mode": "seq-mean-token-mean",
    "actor_rollout_ref.actor.clip_ratio_low": 3e-4, "actor_rollout_ref.actor.clip_ratio_high": 4e-4,
    "actor_rollout_ref.actor.use_kl_loss": False, "algorithm.adv_estimator": "pearl", "algorithm.use_kl_in_reward": False,
    "pearl.advantage.gamma": 0.98, "actor_rollout_ref.rollout.agent.default_agent_loop": "pearl_tutor",
    "reward.reward_manager.name": "pearl_judge", "trainer.v1.trainer_mode": "pearl_sync", "data.return_raw_chat": True,
}
"""Settings of the method every PEARL run has (a sample of config/parts/*.yaml and the estimator's gamma)."""


def flat(config, read_pearl: bool = True) -> dict:
    """A composed config as ``dotted.path -> value`` (interpolations unresolved: a derived key differs only where its
    source does). The ``pearl`` section is what the run reads: its dataclasses with the config's keys in place of their
    defaults, so a run that leaves a method setting to its default and one that writes the default agree (unless
    ``read_pearl`` is False: the keys a file itself writes)."""
    def walk(node, prefix):
        if isinstance(node, dict):
            for key, value in node.items():
                yield from walk(value, f"{prefix}{key}.")
        else:
            yield prefix[:-1], node
    tree = OmegaConf.to_container(config, resolve=False)
    if read_pearl:
        tree["pearl"] = dataclasses.asdict(load_pearl_config(tree.get("pearl")))
    return dict(walk(tree, ""))


def differences(a, b) -> dict:
    fa, fb = flat(a), flat(b)
    return {key: (fa.get(key, "<unset>"), fb.get(key, "<unset>")) for key in fa.keys() | fb.keys()
            if fa.get(key, "<unset>") != fb.get(key, "<unset>")}


def test_the_cpu_recipe_runs_the_cluster_recipes_method(tmp_path):
    cpu = recipe_config(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path)
    fsdp = recipe_config(RECIPES / "run_qwen3_30b_a3b_pearl_gspo_fsdp.sh", tmp_path)
    assert {key: value for key, value in differences(cpu, fsdp).items() if not key.startswith(RUN_KEYS)} == {}
    assert all(flat(cpu)[key] == flat(fsdp)[key] == value for key, value in METHOD.items())


def test_train_local_runs_the_cpu_recipes_config_outside_device_engine_rollout_and_sizes(tmp_path):
    """What `pearl-verl train-local` shows learning is what the CPU recipe, and so a cluster, runs."""
    from pearl_verl.train_local.runtime import compose_verl_config

    ours = _train_local_overrides(tmp_path)
    train_local = compose_verl_config(ours)
    cpu = recipe_config(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path)
    assert {key: value for key, value in differences(train_local, cpu).items() if not key.startswith(RUN_KEYS)} == {}
    assert all(flat(train_local)[key] == value for key, value in METHOD.items())
    # the held-out validation samples at the training temperature, wherever that is set
    assert compose_verl_config([*ours, "actor_rollout_ref.rollout.temperature=0.7"]).actor_rollout_ref.rollout.val_kwargs[
        "temperature"] == 0.7
    # a method setting changed on train-local's command line is a difference the check sees
    changed = compose_verl_config([*ours, "actor_rollout_ref.actor.clip_ratio_high=0.2"])
    assert differences(changed, cpu).keys() - {k for k in differences(changed, cpu) if k.startswith(RUN_KEYS)} == {
        "actor_rollout_ref.actor.clip_ratio_high"}


FP32 = {"param_dtype": "fp32", "reduce_dtype": "fp32", "buffer_dtype": "fp32"}


@pytest.mark.parametrize(("env", "mixed_precision"), [
    ({"ATEN_CPU_CAPABILITY": "avx2"}, FP32),  # torch's kernels as on an AVX2 machine: bfloat16 would be emulated
    ({"ATEN_CPU_CAPABILITY": "avx2", "TRAIN_DTYPE": "bfloat16"}, None),  # verl's bf16 autocast, asked for by name
    ({"TRAIN_DTYPE": "float32"}, FP32),
])
def test_the_cpu_recipe_trains_in_float32_where_bfloat16_would_be_emulated(tmp_path, env, mixed_precision):
    cfg = recipe_config(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, **env)
    found = OmegaConf.select(cfg, "actor_rollout_ref.actor.fsdp_config.mixed_precision")
    assert (None if found is None else OmegaConf.to_container(found)) == mixed_precision


def test_a_bad_train_dtype_stops_the_cpu_recipe_with_the_allowed_values(tmp_path):
    proc = subprocess.run(["bash", str(RECIPES / "run_cpu_pearl_gspo.sh"), "--dry-run"], capture_output=True, text=True,
                          env={**os.environ, "DATA_DIR": str(tmp_path), "TRAIN_DTYPE": "half"})
    assert proc.returncode == 2 and "python3 -m pearl_verl" not in proc.stdout
    assert "invalid choice: 'half' (choose from 'auto', 'float32', 'bfloat16')" in proc.stderr


DERIVED = {
    "actor_rollout_ref.rollout.seed": "data.seed",
    "actor_rollout_ref.actor.data_loader_seed": "data.seed",
    "actor_rollout_ref.rollout.prompt_length": "data.max_prompt_length",
    "actor_rollout_ref.rollout.response_length": "data.max_response_length",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "ray_kwargs.ray_init.num_gpus": "trainer.n_gpus_per_node",
}
"""A CPU run's verl settings that follow another one: interpolated in config/parts/cpu.yaml (or verl's own YAML)."""


@pytest.mark.parametrize("seed", [None, 7])
def test_a_cpu_runs_derived_settings_follow_their_source_and_neither_launcher_spells_them(tmp_path, seed):
    """train-local and the CPU recipe write one seed, one micro-batch, one GPU count; the config does the rest, so
    the two cannot drift apart on them, and every checkpoint keeps its Hugging Face export."""
    from pearl_verl.train_local.local_config import LocalTrainConfig
    from pearl_verl.train_local.runtime import compose_verl_config

    local = _train_local_overrides(tmp_path, **({} if seed is None else {"seed": seed, "micro_batch": 2}))
    env = {} if seed is None else {"SEED": str(seed), "NGPUS_PER_NODE": "2"}
    recipe = RECIPES / "run_cpu_pearl_gspo.sh"
    for run, overrides in (("train-local", local), ("cpu recipe", recipe_overrides(recipe, tmp_path, **env))):
        keys = {o.split("=", 1)[0].lstrip("+") for o in overrides}
        assert keys & {*DERIVED, "actor_rollout_ref.actor.checkpoint.save_contents"} == set(), run
    local_cfg, recipe_cfg = compose_verl_config(local), recipe_config(recipe, tmp_path, **env)
    assert local_cfg.ray_kwargs.ray_init.include_dashboard is recipe_cfg.ray_kwargs.ray_init.include_dashboard is False
    keys = {*DERIVED, *DERIVED.values(), "actor_rollout_ref.actor.checkpoint.save_contents"}
    local_values, recipe_values = ({key: OmegaConf.select(cfg, key) for key in keys} for cfg in (local_cfg, recipe_cfg))
    for values in (local_values, recipe_values):
        assert all(values[key] == values[source] for key, source in DERIVED.items())
        assert "hf_model" in values["actor_rollout_ref.actor.checkpoint.save_contents"]
    assert local_values["data.seed"] == (LocalTrainConfig().seed if seed is None else seed)
    assert local_values["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"] == (16 if seed is None else 2)
    assert (recipe_values["data.seed"], recipe_values["ray_kwargs.ray_init.num_gpus"]) == (
        (42, 1) if seed is None else (seed, 2))


def test_train_local_samples_training_and_held_out_dialogues_from_its_top_k(tmp_path):
    """The main job's tutor draws from the k most likely tokens when it trains and when it is evaluated (one policy
    measured as it was trained); 0 is verl's -1, all tokens."""
    from pearl_verl.train_local.local_config import LocalTrainConfig
    from pearl_verl.train_local.runtime import compose_verl_config

    default = LocalTrainConfig().top_k
    assert default > 0
    for top_k, in_verl in ((default, default), (7, 7), (0, -1)):
        rollout = compose_verl_config(_train_local_overrides(tmp_path, top_k=top_k)).actor_rollout_ref.rollout
        assert rollout.top_k == rollout.val_kwargs.top_k == in_verl


def test_the_method_is_written_once_in_the_pearl_configs(tmp_path):
    """No recipe and no train-local override sets a key of config/parts/adv_gspo.yaml or method.yaml: they are read
    from there, by every run."""
    parts = Path(config_module.__file__).parent / "parts"
    method = {key for name in ("adv_gspo.yaml", "method.yaml") for key in flat(OmegaConf.load(parts / name), False)}
    assert set(METHOD) - {"pearl.advantage.gamma"} <= method
    for unknown in (lambda: config_flags("ppo_trainer"), lambda: compose_config("pearl_grpo", [])):
        with pytest.raises(ValueError, match="unknown PEARL config .*; one of pearl_adv_gspo, pearl_gspo, pearl_gspo_cpu"):
            unknown()
    train_local = _train_local_overrides(tmp_path, rollout="vllm")
    runs = {"train-local": train_local, **{recipe: recipe_overrides(RECIPES / recipe, tmp_path) for recipe in (
        "run_cpu_pearl_gspo.sh", "run_qwen3_30b_a3b_pearl_gspo_fsdp.sh", "run_qwen3_30b_a3b_pearl_gspo_megatron.sh",
        "run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh", "smoke_1gpu.sh")}}
    knobs = {"actor_rollout_ref.rollout.temperature"}  # train-local's --temperature (default: the config's 1.0)
    for run, overrides in runs.items():
        keys = {o.split("=", 1)[0].lstrip("+") for o in overrides}
        assert keys & method - knobs == set(), run


# What may differ between two PEARL SFT runs' composed configs: device and engine, sizes and rate, seeds, the model,
# the data and where the run's files go. The rest (pearl_sft's parts) must be the same everywhere.
SFT_RUN_KEYS = (
    "trainer.device", "data.num_workers", "data.use_dynamic_bsz", "model.use_remove_padding",
    "model.enable_gradient_checkpointing", "model.override_config.", "engine.model_dtype", "engine.use_torch_compile",
    "engine.mixed_precision.", "engine.param_offload", "engine.optimizer_offload", "engine.ulysses_sequence_parallel_size",
    "data.train_batch_size", "data.micro_batch_size_per_gpu", "data.max_token_len_per_gpu", "data.max_length",
    "data.truncation", "optim.lr", "engine.seed", "trainer.seed", "model.path", "data.train_files", "data.val_files",
    "trainer.total_training_steps", "trainer.total_epochs", "trainer.save_freq", "trainer.test_freq", "trainer.resume_mode",
    "trainer.default_local_dir", "trainer.logger", "trainer.project_name", "trainer.experiment_name", "trainer.nnodes",
    "trainer.n_gpus_per_node",
)
SFT_RECIPE = RECIPES / "run_qwen3_30b_a3b_instruct_sft.sh"
SFT_METHOD = {
    "data.messages_key": "messages", "data.pad_mode": "no_padding", "model.lora_rank": 0, "engine.strategy": "fsdp2",
    "optim.optimizer": "AdamW", "optim.lr_scheduler_type": "constant", "optim.lr_warmup_steps_ratio": 0.0,
    "optim.clip_grad": 1.0, "optim.weight_decay": 0.01,
    "checkpoint.save_contents": ["model", "optimizer", "extra", "hf_model"],
}


def _train_local_overrides(tmp_path: Path, rollout: str = "hf", **settings) -> list[str]:
    """What train-local's RL stage composes at its defaults, or at ``settings`` (``LocalRun.overrides`` without
    building a run)."""
    from pearl_verl.train_local.local_config import LocalTrainConfig
    from pearl_verl.train_local.train import algorithm_overrides
    from pearl_verl.train_local.verl_run import rl_overrides, validation_overrides

    c = LocalTrainConfig(**settings)
    return [*algorithm_overrides(c),
            *rl_overrides(out=tmp_path, policy=tmp_path / "p", data=tmp_path / "d", steps=c.steps, save_freq=c.save_every,
                          start="disable", judge="offline", rollout_dtype="float32", rollout=rollout),
            *validation_overrides(folder=tmp_path / "validation", problems=c.eval_problems,
                                  dialogues_per_problem=c.group_size * c.eval_seeds, every=c.eval_every,
                                  before_training=True)]


def _train_local_sft_overrides(tmp_path: Path) -> list[str]:
    from pearl_verl.train_local.cold_start import sft_overrides
    from pearl_verl.train_local.local_config import LocalTrainConfig
    from pearl_verl.train_local.precision import SFT_ENGINE, precision_overrides

    c = LocalTrainConfig()
    return sft_overrides(parquet=tmp_path / "d.parquet", model=tmp_path / "m", out=tmp_path / "cold_start",
                         steps=c.cold_start_steps, batch_size=c.batch_problems * c.group_size,
                         micro_batch_size=c.micro_batch_size, max_length=c.prompt_length + c.response_length,
                         lr=c.sft_learning_rate, seed=c.seed, mixed_precision=precision_overrides("float32", SFT_ENGINE))


def test_train_locals_cold_start_runs_the_cluster_sft_recipes_config_outside_device_engine_and_sizes(
        sft_command, tmp_path):
    train_local = compose_config(PEARL_SFT_CPU, _train_local_sft_overrides(tmp_path))
    recipe = compose_config(PEARL_SFT, sft_command(SFT_RECIPE, DATA_DIR=str(tmp_path))[1])
    assert {k: v for k, v in differences(train_local, recipe).items() if not k.startswith(SFT_RUN_KEYS)} == {}
    assert all(flat(train_local)[key] == flat(recipe)[key] == value for key, value in SFT_METHOD.items())


def test_the_sft_settings_are_written_once_in_the_pearl_sft_config(sft_command, tmp_path):
    """No SFT recipe and not train-local's cold start sets a key of config/parts/sft.yaml: every run reads it there."""

    method = set(flat(OmegaConf.load(Path(config_module.__file__).parent / "parts" / "sft.yaml"), False))
    assert set(SFT_METHOD) <= method
    runs = {"train-local": _train_local_sft_overrides(tmp_path),
            **{name: sft_command(RECIPES / name)[1] for name in (SFT_RECIPE.name, "run_qwen3_32b_judge_sft.sh")}}
    for run, overrides in runs.items():
        assert {o.split("=", 1)[0].lstrip("+") for o in overrides} & method == set(), run


def test_the_host_cpu_engine_settings_are_written_once_for_the_rl_actor_and_the_sft_trainer():
    """host_model.yaml and host_engine.yaml reach both trainers' paths; cpu.yaml and sft_cpu.yaml repeat none of it."""
    parts = Path(config_module.__file__).parent / "parts"
    rl, sft = compose_config(PEARL_GSPO_CPU, []), compose_config(PEARL_SFT_CPU, [])
    for part, rl_at, sft_at in (("host_model", "actor_rollout_ref.model", "model"),
                                ("host_engine", "actor_rollout_ref.actor.fsdp_config", "engine")):
        settings = flat(OmegaConf.load(parts / f"{part}.yaml"), False)
        assert settings
        for key, value in settings.items():
            assert OmegaConf.select(rl, f"{rl_at}.{key}") == OmegaConf.select(sft, f"{sft_at}.{key}") == value, key
        for user, at in (("cpu.yaml", rl_at), ("sft_cpu.yaml", sft_at)):
            assert not {f"{at}.{key}" for key in settings} & set(flat(OmegaConf.load(parts / user), False)), user


def test_cpu_recipe_composes_and_validates_with_the_cpu_parts(tmp_path):
    overrides = recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path)
    assert len({o.split("=", 1)[0] for o in overrides}) == len(overrides)  # no key set twice
    cfg = recipe_config(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path)
    assert cfg.actor_rollout_ref.rollout.name == "hf" and cfg.trainer.device == "cpu"
    prepare(cfg)  # (in this process verl's platform is not the CPU one, so prepare sets the device to its own)
    assert cfg.ray_kwargs.ray_init.num_gpus == cfg.trainer.n_gpus_per_node == 1  # logical GPUs for Ray's placement
    assert cfg.reward.reward_kwargs.backend == "fitted" and cfg.pearl.student.backend == "offline"
    served = recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, JUDGE_BASE_URL="http://j:8000/v1",
                              JUDGE_MODEL="judge", TUTOR="smollm2")
    assert "+reward.reward_kwargs.base_url=http://j:8000/v1" in served and "+reward.reward_kwargs.backend=llm" in served
    assert f"actor_rollout_ref.model.path={tmp_path / 'model'}" in served  # MODEL_PATH wins over TUTOR's default


def test_cpu_recipe_on_vllm_composes_with_the_settings_train_local_uses(tmp_path):
    """ROLLOUT_NAME=vllm: verl's own rollout with vLLM's CPU settings, config/parts/vllm_cpu.yaml as train-local
    --rollout vllm reads it, and as the check before Ray starts holds a run to."""
    from pearl_verl.verl_plugin.cpu.parts import VLLM_CPU_PART, check_cpu_rollout, vllm_cpu_settings

    overrides = recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, ROLLOUT_NAME="vllm", WEIGHT_BUCKET_MB="1")
    assert len({o.split("=", 1)[0] for o in overrides}) == len(overrides)  # no key set twice
    assert VLLM_CPU_PART in overrides and VLLM_CPU_PART in _train_local_overrides(tmp_path, rollout="vllm")
    cfg = recipe_config(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, ROLLOUT_NAME="vllm", WEIGHT_BUCKET_MB="1")
    rollout = cfg.actor_rollout_ref.rollout
    assert vllm_cpu_settings() == {"enable_sleep_mode": False, "free_cache_engine": False, "enforce_eager": True,
                                   "enable_chunked_prefill": False}
    assert {key: rollout[key] for key in vllm_cpu_settings()} == vllm_cpu_settings()
    assert rollout.name == "vllm" and rollout.checkpoint_engine.update_weights_bucket_megabytes == 1
    hf = {o for o in recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path)}
    extra = set(overrides) - hf  # the rollout and its CPU settings, nothing else
    assert {o.split("=", 1)[0] for o in extra} == {
        "actor_rollout_ref.rollout.name", "+parts",
        "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes"}
    # the check before Ray starts passes the composed run, and names the part to a run without it (vLLM's CPU build
    # is in the test install; the model path has no config.json, so the head-size check has nothing to read)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VERL_PLATFORM", "cpu")
        check_cpu_rollout(cfg)
        without = compose_config(PEARL_GSPO_CPU, ["actor_rollout_ref.rollout.name=vllm"])
        with pytest.raises(InputError, match=r"enforce_eager=True .*\+parts=vllm_cpu sets them all"):
            check_cpu_rollout(without)
    bad = subprocess.run(["bash", str(RECIPES / "run_cpu_pearl_gspo.sh"), "--dry-run"], capture_output=True, text=True,
                         env={**os.environ, "DATA_DIR": str(tmp_path), "ROLLOUT_NAME": "sglang"})
    assert bad.returncode == 2 and "ROLLOUT_NAME=sglang: this recipe runs hf or vllm" in bad.stderr


def test_the_cpu_recipe_bounds_smollm2s_micro_batches_and_serves_one_model_on_both_rollouts(tmp_path):
    """SmolLM2's 49,152-token vocabulary took verl's update to 15 GB at the tiny model's 16,384 tokens a micro-batch
    (Ray killed the run on 24 GB, BENCHMARKS.md): the recipe takes 4,096 for it, which still holds a whole dialogue."""
    def token_budgets(**env):
        overrides = recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, **env)
        return {o.split("=")[0]: int(o.split("=")[1]) for o in overrides if "max_token_len_per_gpu=" in o}

    tiny, smollm2 = token_budgets(), token_budgets(TUTOR="smollm2")
    assert set(tiny) == set(smollm2) and len(tiny) == 3
    assert set(tiny.values()) == {16384} and set(smollm2.values()) == {4096}
    config = recipe_config(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, TUTOR="smollm2")
    assert config.data.max_prompt_length + config.data.max_response_length <= 4096

    def model_path(rollout):  # an empty MODEL_PATH takes the recipe's default, as an unset one does
        overrides = recipe_overrides(RECIPES / "run_cpu_pearl_gspo.sh", tmp_path, MODEL_PATH="", ROLLOUT_NAME=rollout,
                                     OUT_DIR=str(tmp_path / "out"))
        return next(o for o in overrides if o.startswith("actor_rollout_ref.model.path="))

    assert model_path("hf") == model_path("vllm")  # the tiny model has heads of 32, which vLLM's CPU attention takes
