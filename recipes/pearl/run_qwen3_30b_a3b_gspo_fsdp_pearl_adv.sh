#!/usr/bin/env bash
# GSPO + PEARL advantage | Qwen3-30B-A3B (MoE) | vLLM rollout | FSDP2 training | 8 x 80 GB+ NVIDIA GPUs
#
# Drops the PEARL estimator into an existing single-reward verl setup: verl's GSM8K/MATH data and
# rule reward (prepare them with verl's examples/data_preprocess/{gsm8k,math_dataset}.py). With one
# reward the estimator runs its scalar fallback (discretise -> group z-score); the GSPO settings are
# the paper's (group 8, lr 1e-6, clip 3e-4/4e-4, no KL, sequence-level aggregation).
# Settings: the environment variables of lib/gspo.sh (MODEL_PATH, DATA_DIR, batch, lengths, ROLLOUT_N, ACTOR_LR...).
#
#   bash recipes/pearl/run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_30b_a3b_gspo_fsdp_pearl_adv.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

: "${MODEL_PATH:=Qwen/Qwen3-30B-A3B-Instruct-2507}"
: "${DATA_DIR:=$HOME/data}"
: "${EXPERIMENT_NAME:=qwen3_30b_a3b_gspo_fsdp_pearl_adv}"
TRAIN_FILES="['$DATA_DIR/gsm8k/train.parquet', '$DATA_DIR/math/train.parquet']"
VAL_FILES="['$DATA_DIR/gsm8k/test.parquet', '$DATA_DIR/math/test.parquet']"
source "$(dirname "${BASH_SOURCE[0]}")/lib/gspo.sh"

run_or_print python3 -m pearl_verl.verl_plugin.main_ppo "${CONFIG[@]}" \
    "${DATA[@]}" "${ALGORITHM[@]}" "${MODEL[@]}" "${GPU[@]}" "${GSPO_ACTOR[@]}" "${FSDP2_ACTOR[@]}" "${ROLLOUT[@]}" \
    "${TRAINER[@]}" "${RECIPE_ARGS[@]}"
