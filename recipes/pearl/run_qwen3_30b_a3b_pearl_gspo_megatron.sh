#!/usr/bin/env bash
# PEARL RL (paper §3.3) | tutor Qwen3-30B-A3B (MoE, after cold-start SFT) | vLLM rollout | Megatron | GSPO |
# The Megatron variant of run_qwen3_30b_a3b_pearl_gspo_fsdp.sh: expert parallelism and MoE router replay (R2:
# the routes of the old-logprob pass are replayed in the update, which stabilises MoE policy ratios).
# Needs megatron-core and mbridge (pip install -e ".[megatron]" on the GPU machine; Python >= 3.12 for
# megatron-core >= 0.17).
# GPUs: 8 x H200 (141 GB) for the tutor, as in the paper; plus the student and judge servers on their own GPUs
# (recipes/pearl/serve_student.sh: 1 x 80 GB; recipes/pearl/serve_judge.sh: 2 x 80 GB).
#
# The tutor talks with the simulated student for up to 15 turns (pearl_tutor agent loop), the judge scores each
# dialogue on 8 dimensions (pearl_judge reward manager), the PEARL estimator turns the scores into advantages
# (discretise -> turn decay 0.98 -> per-dimension group z-score -> mean; pearl_sync trainer mode), and verl's GSPO
# updates the policy: group 8, temperature 1.0, lr 1e-6, no KL, clip 3e-4/4e-4, sequence-level aggregation.
# Data: `pearl-verl prepare-data` (train/val parquet with the student conditions).
# Settings: the environment variables of lib/pearl_rl.sh and lib/gspo.sh (endpoints, batch, lengths...), and the
# actor's parallelism ACTOR_TP, ACTOR_PP, ACTOR_EP, ACTOR_ETP.
#
#   STUDENT_BASE_URL=http://host:8001/v1 JUDGE_BASE_URL=http://host:8000/v1 \
#       bash recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_megatron.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_megatron.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

: "${EXPERIMENT_NAME:=qwen3_30b_a3b_pearl_gspo_megatron}"
: "${ACTOR_TP:=2}"
: "${ACTOR_PP:=1}"
: "${ACTOR_EP:=8}"
: "${ACTOR_ETP:=1}"
source "$(dirname "${BASH_SOURCE[0]}")/lib/pearl_rl.sh"

ENGINE=(
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=${ACTOR_TP}
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=${ACTOR_PP}
    actor_rollout_ref.actor.megatron.expert_model_parallel_size=${ACTOR_EP}
    actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=${ACTOR_ETP}
    actor_rollout_ref.actor.megatron.param_offload=True
    actor_rollout_ref.actor.megatron.optimizer_offload=True
    actor_rollout_ref.actor.megatron.use_mbridge=True
    actor_rollout_ref.actor.megatron.router_replay.mode=R2
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_dtype=fp32
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=${ACTOR_TP}
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=${ACTOR_PP}
    actor_rollout_ref.ref.megatron.expert_model_parallel_size=${ACTOR_EP}
    actor_rollout_ref.ref.megatron.expert_tensor_parallel_size=${ACTOR_ETP}
    actor_rollout_ref.ref.megatron.param_offload=True
    actor_rollout_ref.ref.megatron.use_mbridge=True
)

run_or_print python3 -m pearl_verl.verl_plugin.main_ppo "${CONFIG[@]}" model_engine=megatron \
    "${DATA[@]}" "${ALGORITHM[@]}" "${AGENT[@]}" "${REWARD[@]}" "${MODEL[@]}" "${GPU[@]}" "${GSPO_ACTOR[@]}" \
    "${ENGINE[@]}" "${ROLLOUT[@]}" "${TRAINER[@]}" "${RECIPE_ARGS[@]}"
