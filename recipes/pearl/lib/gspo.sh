#!/usr/bin/env bash
# The paper's GSPO on verl (vLLM rollout unless ROLLOUT_NAME says otherwise), shared by every RL recipe (sourced, not run).
#
# The method's settings (GSPO's loss and clip, the pearl estimator, no KL) are not here: they are written once in
# pearl_verl/verl_plugin/config/ (Hydra YAML on verl's ppo_trainer), which every PEARL run starts from, train-local
# too. CONFIG names that file: pearl_adv_gspo here; lib/pearl_rl.sh and the CPU recipe name theirs. What this file
# sets is what differs between runs: sizes, learning rate, engine, rollout, logging.
#
# Each setting is an environment variable. A recipe sets its own defaults before sourcing this file
# (`: "${TRAIN_BATCH_SIZE:=64}"`), so the user's environment wins, then the recipe, then this file.
# Leaves arrays for the recipe's command: CONFIG (first), DATA, ALGORITHM, MODEL, GPU, GSPO_ACTOR, FSDP2_ACTOR,
# ROLLOUT, TRAINER.

# ---- user-adjustable ----
: "${NNODES:=1}"
: "${NGPUS_PER_NODE:=8}"
: "${TRAIN_BATCH_SIZE:=128}"            # problems per step (x ROLLOUT_N responses)
: "${PPO_MINI_BATCH_SIZE:=32}"
: "${MAX_PROMPT_LENGTH:=2048}"
: "${MAX_RESPONSE_LENGTH:=6144}"
: "${PPO_MAX_TOKEN_LEN_PER_GPU:=32768}"
: "${ROLLOUT_N:=8}"                      # GSPO group size (paper: 8)
: "${ROLLOUT_NAME:=vllm}"                # verl's rollout backend (hf: pearl_verl's CPU backend)
: "${ROLLOUT_TP:=4}"
: "${ROLLOUT_GPU_MEM_UTIL:=0.6}"
: "${ACTOR_LR:=1e-6}"                    # paper: 1e-6
# PEARL_GAMMA                            # the estimator's turn decay; unset: the method's (paper: 0.98)
: "${TOTAL_EPOCHS:=3}"
: "${SAVE_FREQ:=20}"                     # checkpoint every N steps
: "${TEST_FREQ:=10}"                     # validation every N steps (-1: never)
: "${LOGGER:=[\"console\"]}"
: "${PROJECT_NAME:=pearl_verl}"
: "${EXPERIMENT_NAME:?the recipe sets EXPERIMENT_NAME before sourcing lib/gspo.sh}"
: "${TRAIN_FILES:?the recipe sets TRAIN_FILES (a Hydra list) before sourcing lib/gspo.sh}"
: "${VAL_FILES:?the recipe sets VAL_FILES (a Hydra list) before sourcing lib/gspo.sh}"
# ---- end user-adjustable ----

: "${PEARL_CONFIG_NAME:=pearl_adv_gspo}"
CONFIG=(--config-path=pkg://pearl_verl.verl_plugin.config --config-name=${PEARL_CONFIG_NAME})

DATA=(
    data.train_files="$TRAIN_FILES"
    data.val_files="$VAL_FILES"
    data.train_batch_size=${TRAIN_BATCH_SIZE}
    data.max_prompt_length=${MAX_PROMPT_LENGTH}
    data.max_response_length=${MAX_RESPONSE_LENGTH}
)

ALGORITHM=(
    ${PEARL_GAMMA:+"+pearl.advantage.gamma=${PEARL_GAMMA}"}
)

MODEL=(
    actor_rollout_ref.model.path="$MODEL_PATH"
)

# On GPUs: sequence packing (flash-attn's varlen kernels), activation checkpointing, vLLM's tensor parallelism and
# memory share. A run on a host CPU takes config/parts/cpu.yaml's instead and leaves this array out.
GPU=(
    actor_rollout_ref.model.use_remove_padding=${USE_REMOVE_PADDING:-True}
    actor_rollout_ref.model.enable_gradient_checkpointing=${GRADIENT_CHECKPOINTING:-True}
    actor_rollout_ref.rollout.tensor_model_parallel_size=${ROLLOUT_TP}
    actor_rollout_ref.rollout.gpu_memory_utilization=${ROLLOUT_GPU_MEM_UTIL}
)

# The paper's GSPO (its loss, clip and no KL: config/parts/adv_gspo.yaml) at this run's lr and batch sizes.
GSPO_ACTOR=(
    actor_rollout_ref.actor.optim.lr=${ACTOR_LR}
    actor_rollout_ref.actor.ppo_mini_batch_size=${PPO_MINI_BATCH_SIZE}
    actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${PPO_MAX_TOKEN_LEN_PER_GPU}
)

# FSDP2 with parameters and optimizer state offloaded: a 30B MoE actor on 8 GPUs beside its vLLM rollout.
FSDP2_ACTOR=(
    actor_rollout_ref.actor.strategy=fsdp2
    actor_rollout_ref.actor.fsdp_config.param_offload=True
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
)

ROLLOUT=(
    actor_rollout_ref.rollout.name=${ROLLOUT_NAME}
    actor_rollout_ref.rollout.n=${ROLLOUT_N}
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=${PPO_MAX_TOKEN_LEN_PER_GPU}
    actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True
    actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=${PPO_MAX_TOKEN_LEN_PER_GPU}
)

TRAINER=(
    trainer.logger="${LOGGER}"
    trainer.project_name=${PROJECT_NAME}
    trainer.experiment_name=${EXPERIMENT_NAME}
    trainer.n_gpus_per_node=${NGPUS_PER_NODE}
    trainer.nnodes=${NNODES}
    trainer.save_freq=${SAVE_FREQ}
    trainer.test_freq=${TEST_FREQ}
    trainer.total_epochs=${TOTAL_EPOCHS}
)
