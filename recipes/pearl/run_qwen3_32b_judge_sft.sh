#!/usr/bin/env bash
# Judge SFT | full finetune of Qwen3-32B as the PEARL judge | verl SFT trainer (FSDP2) |
# GPUs: 16 x 80 GB (2 nodes x 8, H100/A100-80G) by default; one node of 8 x 141 GB (H200), or
# 8 x 80 GB with OFFLOAD=True (parameters and optimizer state on CPU, slower).
#
# The paper's settings (appendix "Judge Agent"): full finetune, 1 epoch, global batch 256, AdamW
# with a fixed learning rate of 5e-6, ZeRO-style sharding (FSDP2 here). Training data: annotated
# trajectories converted by
#   pearl-verl judge-sft-data annotated.jsonl -o $DATA_DIR/judge_sft/train.parquet \
#       --val-output $DATA_DIR/judge_sft/val.parquet --val-fraction 0.01
# Each example is the exact judge prompt plus the annotation as the assistant turn (loss on the
# judgement only); `enable_thinking` is False, as the judge is served without reasoning.
#
# Settings: the environment variables of lib/sft.sh (OFFLOAD, NNODES, LR, SAVE_DIR...) and those below.
# Multi-node: run the same command on every node with NODE_RANK=0..NNODES-1 and MASTER_ADDR set.
# The last checkpoint includes an HF model ("hf_model"), which recipes/pearl/serve_judge.sh serves.
#
#   bash recipes/pearl/run_qwen3_32b_judge_sft.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_32b_judge_sft.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

: "${MODEL_PATH:=Qwen/Qwen3-32B}"
: "${DATA_DIR:=$HOME/data}"
: "${TRAIN_FILES:=$DATA_DIR/judge_sft/train.parquet}"
: "${VAL_FILES:=$DATA_DIR/judge_sft/val.parquet}"
: "${NNODES:=2}"
# Rubric (~3.5k tokens) + dialogue (up to ~9k for 15 turns) + judgement (~1.5k).
: "${MAX_LENGTH:=16384}"
: "${MAX_TOKEN_LEN_PER_GPU:=32768}"
: "${SP_SIZE:=2}"
: "${EXPERIMENT_NAME:=qwen3_32b_judge_sft}"
source "$(dirname "${BASH_SOURCE[0]}")/lib/sft.sh"

DATA+=(data.enable_thinking_key=enable_thinking)
run_sft
