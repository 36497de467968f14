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
# Settings: the environment variables of lib/pearl_rl.sh and lib/gspo.sh (endpoints, batch, lengths...), and SP_SIZE.
#
#   STUDENT_BASE_URL=http://host:8001/v1 JUDGE_BASE_URL=http://host:8000/v1 \
#       bash recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_fsdp.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_fsdp.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

: "${EXPERIMENT_NAME:=qwen3_30b_a3b_pearl_gspo_fsdp}"
: "${SP_SIZE:=2}"  # ulysses sequence parallel for long dialogues
source "$(dirname "${BASH_SOURCE[0]}")/lib/pearl_rl.sh"

ENGINE=("${FSDP2_ACTOR[@]}" actor_rollout_ref.actor.ulysses_sequence_parallel_size=${SP_SIZE})

run_or_print python3 -m pearl_verl.verl_plugin.main_ppo "${CONFIG[@]}" \
    "${DATA[@]}" "${ALGORITHM[@]}" "${AGENT[@]}" "${REWARD[@]}" "${MODEL[@]}" "${GPU[@]}" "${GSPO_ACTOR[@]}" \
    "${ENGINE[@]}" "${ROLLOUT[@]}" "${TRAINER[@]}" "${RECIPE_ARGS[@]}"
