#!/usr/bin/env bash
# Cold-start SFT | full finetune of Qwen3-30B-A3B-Instruct-2507 as the tutor | verl SFT trainer (FSDP2) |
# GPUs: 8 x 141 GB (one H200 node, as in the paper) by default; 8 x 80 GB (H100/A100-80G) with
# OFFLOAD=True (parameters and optimizer state on CPU, slower), or 16 x 80 GB over 2 nodes.
#
# The paper's settings (appendix "Implementation details"): full-parameter finetuning for one epoch
# with AdamW at a fixed learning rate of 5e-6, on teacher dialogues (DeepSeek-V3.2 tutoring the
# controllable simulator, 193K samples after filtering). The global batch size is not reported;
# 256 (the paper's judge SFT batch) is ours. Training data, one dialogue per row, loss on every
# tutor turn:
#   pearl-verl prepare-data gsm8k=gsm8k/train.jsonl math=math/train.jsonl mathdial=mathdial/train.jsonl \
#       -o $DATA_DIR/pearl --conditions-per-problem 4
#   pearl-verl gen-sft $DATA_DIR/pearl/train.parquet -o $DATA_DIR/pearl_sft --samples-per-row 4 \
#       --teacher-base-url ... --teacher-model ... --student-backend llm --student-base-url ... \
#       --tokenizer $MODEL_PATH --max-length $MAX_LENGTH
# (gen-sft's --max-length must not exceed this recipe's MAX_LENGTH: verl's truncation=error stops
# training on a longer chat.) The last checkpoint holds an HF model ("hf_model") that the RL recipes
# take as MODEL_PATH.
#
# Settings: the environment variables of lib/sft.sh (OFFLOAD, NNODES, LR, SAVE_DIR...) and those below.
# Multi-node: run the same command on every node with NODE_RANK=0..NNODES-1 and MASTER_ADDR set.
#
#   bash recipes/pearl/run_qwen3_30b_a3b_instruct_sft.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_30b_a3b_instruct_sft.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

: "${MODEL_PATH:=Qwen/Qwen3-30B-A3B-Instruct-2507}"
: "${DATA_DIR:=$HOME/data}"
: "${TRAIN_FILES:=$DATA_DIR/pearl_sft/train.parquet}"
: "${VAL_FILES:=$DATA_DIR/pearl_sft/val.parquet}"
# Tutor prompt with the reference solution (~0.6-1.5k tokens) + up to 15 tutor and student turns.
: "${MAX_LENGTH:=8192}"
: "${MAX_TOKEN_LEN_PER_GPU:=16384}"
: "${EXPERIMENT_NAME:=qwen3_30b_a3b_instruct_cold_start_sft}"
source "$(dirname "${BASH_SOURCE[0]}")/lib/sft.sh"

run_sft
