#!/usr/bin/env bash
# GSPO + PEARL advantage | Qwen3-30B-A3B (MoE) | vLLM rollout | FSDP2 training | 8 x 80 GB+ NVIDIA GPUs
#
# Drops the PEARL estimator into an existing single-reward verl setup: verl's GSM8K/MATH data and
# rule reward (prepare them with verl's examples/data_preprocess/{gsm8k,math_dataset}.py). With one
# reward the estimator runs its scalar fallback (discretise -> group z-score); the GSPO settings are
# the paper's (group 8, lr 1e-6, clip 3e-4/4e-4, no KL, sequence-level aggregation).
#
#   bash recipes/pearl/run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# ---- user-adjustable ----
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-30B-A3B-Instruct-2507}
NNODES=${NNODES:-1}
NGPUS_PER_NODE=${NGPUS_PER_NODE:-8}
DATA_DIR=${DATA_DIR:-$HOME/data}

train_batch_size=${TRAIN_BATCH_SIZE:-128}
ppo_mini_batch_size=${PPO_MINI_BATCH_SIZE:-32}
max_prompt_length=${MAX_PROMPT_LENGTH:-2048}
max_response_length=${MAX_RESPONSE_LENGTH:-6144}
ppo_max_token_len_per_gpu=${PPO_MAX_TOKEN_LEN_PER_GPU:-32768}
rollout_n=${ROLLOUT_N:-8}
rollout_tp=${ROLLOUT_TP:-4}
rollout_gpu_mem_util=${ROLLOUT_GPU_MEM_UTIL:-0.6}
actor_lr=${ACTOR_LR:-1e-6}
pearl_gamma=${PEARL_GAMMA:-0.98}
total_epochs=${TOTAL_EPOCHS:-3}
logger=${LOGGER:-'["console"]'}
project_name=${PROJECT_NAME:-pearl_verl}
experiment_name=${EXPERIMENT_NAME:-qwen3_30b_a3b_gspo_fsdp_pearl_adv}
# ---- end user-adjustable ----

DATA=(
    data.train_files="['$DATA_DIR/gsm8k/train.parquet', '$DATA_DIR/math/train.parquet']"
    data.val_files="['$DATA_DIR/gsm8k/test.parquet', '$DATA_DIR/math/test.parquet']"
    data.train_batch_size=${train_batch_size}
    data.max_prompt_length=${max_prompt_length}
    data.max_response_length=${max_response_length}
    data.filter_overlong_prompts=True
    data.truncation=error
)

ALGORITHM=(
    algorithm.adv_estimator=pearl
    algorithm.use_kl_in_reward=False
    +pearl.advantage.gamma=${pearl_gamma}
)

MODEL=(
    actor_rollout_ref.model.path="$MODEL_PATH"
    actor_rollout_ref.model.use_remove_padding=True
    actor_rollout_ref.model.enable_gradient_checkpointing=True
)

ACTOR=(
    actor_rollout_ref.actor.strategy=fsdp2
    actor_rollout_ref.actor.policy_loss.loss_mode=gspo
    # verl 0.9.1 defaults to token-mean; GSPO's sequence-level objective needs this explicitly.
    actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean
    actor_rollout_ref.actor.clip_ratio_low=3e-4
    actor_rollout_ref.actor.clip_ratio_high=4e-4
    actor_rollout_ref.actor.clip_ratio_c=10.0
    actor_rollout_ref.actor.use_kl_loss=False
    actor_rollout_ref.actor.entropy_coeff=0
    actor_rollout_ref.actor.optim.lr=${actor_lr}
    actor_rollout_ref.actor.ppo_mini_batch_size=${ppo_mini_batch_size}
    actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${ppo_max_token_len_per_gpu}
    actor_rollout_ref.actor.fsdp_config.param_offload=True
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
)

ROLLOUT=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.n=${rollout_n}
    actor_rollout_ref.rollout.temperature=1.0
    actor_rollout_ref.rollout.top_p=1.0
    actor_rollout_ref.rollout.tensor_model_parallel_size=${rollout_tp}
    actor_rollout_ref.rollout.gpu_memory_utilization=${rollout_gpu_mem_util}
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=${ppo_max_token_len_per_gpu}
    actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True
    actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=${ppo_max_token_len_per_gpu}
)

TRAINER=(
    trainer.logger="${logger}"
    trainer.project_name=${project_name}
    trainer.experiment_name=${experiment_name}
    trainer.n_gpus_per_node=${NGPUS_PER_NODE}
    trainer.nnodes=${NNODES}
    trainer.save_freq=20
    trainer.test_freq=10
    trainer.total_epochs=${total_epochs}
)

run_or_print python3 -m pearl_verl.verl_plugin.main_ppo \
    "${DATA[@]}" "${ALGORITHM[@]}" "${MODEL[@]}" "${ACTOR[@]}" "${ROLLOUT[@]}" "${TRAINER[@]}" "${RECIPE_ARGS[@]}"
