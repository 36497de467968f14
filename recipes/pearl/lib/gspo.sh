#!/usr/bin/env bash
# The paper's GSPO on verl (vLLM rollout unless ROLLOUT_NAME says otherwise), shared by every RL recipe (sourced, not run).
#
# Each setting is an environment variable. A recipe sets its own defaults before sourcing this file
# (`: "${TRAIN_BATCH_SIZE:=64}"`), so the user's environment wins, then the recipe, then this file.
# Leaves arrays for the recipe's command: DATA, ALGORITHM, MODEL, GSPO_ACTOR, FSDP2_ACTOR, ROLLOUT, TRAINER.

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
: "${PEARL_GAMMA:=0.98}"                 # the estimator's turn decay (paper: 0.98)
: "${TOTAL_EPOCHS:=3}"
: "${SAVE_FREQ:=20}"                     # checkpoint every N steps
: "${TEST_FREQ:=10}"                     # validation every N steps (-1: never)
: "${LOGGER:=[\"console\"]}"
: "${PROJECT_NAME:=pearl_verl}"
: "${EXPERIMENT_NAME:?the recipe sets EXPERIMENT_NAME before sourcing lib/gspo.sh}"
: "${TRAIN_FILES:?the recipe sets TRAIN_FILES (a Hydra list) before sourcing lib/gspo.sh}"
: "${VAL_FILES:?the recipe sets VAL_FILES (a Hydra list) before sourcing lib/gspo.sh}"
# ---- end user-adjustable ----

DATA=(
    data.train_files="$TRAIN_FILES"
    data.val_files="$VAL_FILES"
    data.train_batch_size=${TRAIN_BATCH_SIZE}
    data.max_prompt_length=${MAX_PROMPT_LENGTH}
    data.max_response_length=${MAX_RESPONSE_LENGTH}
    data.filter_overlong_prompts=True
    data.truncation=error
)

ALGORITHM=(
    algorithm.adv_estimator=pearl
    algorithm.use_kl_in_reward=False
    +pearl.advantage.gamma=${PEARL_GAMMA}
)

MODEL=(
    actor_rollout_ref.model.path="$MODEL_PATH"
    actor_rollout_ref.model.use_remove_padding=${USE_REMOVE_PADDING:-True}
    actor_rollout_ref.model.enable_gradient_checkpointing=${GRADIENT_CHECKPOINTING:-True}
)

# The paper's GSPO: sequence-level ratio, clip 3e-4/4e-4, no KL, lr 1e-6 (the engine's settings are the recipe's).
GSPO_ACTOR=(
    actor_rollout_ref.actor.policy_loss.loss_mode=gspo
    # verl 0.9.1 defaults to token-mean; GSPO's sequence-level objective needs this explicitly.
    actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean
    actor_rollout_ref.actor.clip_ratio_low=3e-4
    actor_rollout_ref.actor.clip_ratio_high=4e-4
    actor_rollout_ref.actor.clip_ratio_c=10.0
    actor_rollout_ref.actor.use_kl_loss=False
    actor_rollout_ref.actor.entropy_coeff=0
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
    actor_rollout_ref.rollout.temperature=1.0
    actor_rollout_ref.rollout.top_p=1.0
    actor_rollout_ref.rollout.tensor_model_parallel_size=${ROLLOUT_TP}
    actor_rollout_ref.rollout.gpu_memory_utilization=${ROLLOUT_GPU_MEM_UTIL}
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
