#!/usr/bin/env bash
# PEARL RL (paper §3.3) | tutor Qwen3-30B-A3B (MoE, after cold-start SFT) | vLLM rollout | FSDP2 | GSPO |
# GPUs: 8 x H200 (141 GB) for the tutor, as in the paper; plus the student and judge servers on their own GPUs
# (recipes/pearl/serve_student.sh: 1 x 80 GB; recipes/pearl/serve_judge.sh: 2 x 80 GB).
#
# The tutor talks with the simulated student for up to 15 turns (pearl_tutor agent loop), the judge scores each
# dialogue on 8 dimensions (pearl_judge reward manager), the PEARL estimator turns the scores into advantages
# (discretise -> turn decay 0.98 -> per-dimension group z-score -> mean; pearl_sync trainer mode), and verl's GSPO
# updates the policy: group 8, temperature 1.0, lr 1e-6, no KL, clip 3e-4/4e-4, sequence-level aggregation.
# Data: `pearl-verl prepare-data` (train/val parquet with the student conditions).
#
#   STUDENT_BASE_URL=http://host:8001/v1 JUDGE_BASE_URL=http://host:8000/v1 \
#       bash recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_fsdp.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_fsdp.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# ---- user-adjustable ----
MODEL_PATH=${MODEL_PATH:-checkpoints/pearl_verl/qwen3_30b_a3b_cold_start_sft/huggingface}
NNODES=${NNODES:-1}
NGPUS_PER_NODE=${NGPUS_PER_NODE:-8}
DATA_DIR=${DATA_DIR:-$HOME/data/pearl}
STUDENT_BASE_URL=${STUDENT_BASE_URL:-http://localhost:8001/v1}
STUDENT_MODEL=${STUDENT_MODEL:-pearl-student}
JUDGE_BASE_URL=${JUDGE_BASE_URL:-http://localhost:8000/v1}
JUDGE_MODEL=${JUDGE_MODEL:-pearl-judge}
# the planner's and the judge's JSON held to its schema by vLLM's structured outputs (`none` for a
# server without them): on a real server a weak model's replies went from 0% to 100% parsed (BENCHMARKS.md)
STRUCTURED_OUTPUT=${STRUCTURED_OUTPUT:-json_schema}

train_batch_size=${TRAIN_BATCH_SIZE:-64}          # problems per step; x group size 8 = 512 dialogues
ppo_mini_batch_size=${PPO_MINI_BATCH_SIZE:-16}
max_prompt_length=${MAX_PROMPT_LENGTH:-4096}       # tutor instruction + problem + reference + opening
max_response_length=${MAX_RESPONSE_LENGTH:-16384}  # all tutor AND student tokens of up to 15 turns
max_tokens_per_turn=${MAX_TOKENS_PER_TURN:-6144}   # the paper's maximum generation length
ppo_max_token_len_per_gpu=${PPO_MAX_TOKEN_LEN_PER_GPU:-24576}
sp_size=${SP_SIZE:-2}                              # ulysses sequence parallel for long dialogues
rollout_tp=${ROLLOUT_TP:-4}
rollout_gpu_mem_util=${ROLLOUT_GPU_MEM_UTIL:-0.6}
total_epochs=${TOTAL_EPOCHS:-3}
logger=${LOGGER:-'["console","wandb"]'}
project_name=${PROJECT_NAME:-pearl_verl}
experiment_name=${EXPERIMENT_NAME:-qwen3_30b_a3b_pearl_gspo_fsdp}
# ---- end user-adjustable ----

require_endpoint student "$STUDENT_BASE_URL"
require_endpoint judge "$JUDGE_BASE_URL"

DATA=(
    data.train_files="['$DATA_DIR/train.parquet']"
    data.val_files="['$DATA_DIR/val.parquet']"
    data.train_batch_size=${train_batch_size}
    data.max_prompt_length=${max_prompt_length}
    data.max_response_length=${max_response_length}
    data.filter_overlong_prompts=True
    data.truncation=error
    data.return_raw_chat=True
)

ALGORITHM=(
    algorithm.adv_estimator=pearl
    algorithm.use_kl_in_reward=False
    trainer.v1.trainer_mode=pearl_sync
    +pearl.advantage.gamma=0.98
)

AGENT=(
    actor_rollout_ref.rollout.agent.default_agent_loop=pearl_tutor
    +pearl.agent.max_tutor_turns=15
    +pearl.agent.max_tokens_per_turn=${max_tokens_per_turn}
    +pearl.student.backend=llm
    +pearl.student.base_url=${STUDENT_BASE_URL}
    +pearl.student.model=${STUDENT_MODEL}
    +pearl.student.structured_output=${STRUCTURED_OUTPUT}
)

REWARD=(
    reward.reward_manager.name=pearl_judge
    reward.reward_model.enable=False
    +reward.reward_kwargs.backend=llm
    +reward.reward_kwargs.base_url=${JUDGE_BASE_URL}
    +reward.reward_kwargs.model=${JUDGE_MODEL}
    +reward.reward_kwargs.structured_output=${STRUCTURED_OUTPUT}
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
    actor_rollout_ref.actor.optim.lr=1e-6
    actor_rollout_ref.actor.ppo_mini_batch_size=${ppo_mini_batch_size}
    actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${ppo_max_token_len_per_gpu}
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=${sp_size}
    actor_rollout_ref.actor.fsdp_config.param_offload=True
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
)

ROLLOUT=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.n=8
    actor_rollout_ref.rollout.temperature=1.0
    actor_rollout_ref.rollout.top_p=1.0
    actor_rollout_ref.rollout.top_k=50
    actor_rollout_ref.rollout.tensor_model_parallel_size=${rollout_tp}
    actor_rollout_ref.rollout.gpu_memory_utilization=${rollout_gpu_mem_util}
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=${ppo_max_token_len_per_gpu}
    actor_rollout_ref.rollout.val_kwargs.n=1
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
    "${DATA[@]}" "${ALGORITHM[@]}" "${AGENT[@]}" "${REWARD[@]}" "${MODEL[@]}" "${ACTOR[@]}" "${ROLLOUT[@]}" \
    "${TRAINER[@]}" "${RECIPE_ARGS[@]}"
