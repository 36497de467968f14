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
# Multi-node: run the same command on every node with NODE_RANK=0..NNODES-1 and MASTER_ADDR set.
# The last checkpoint includes an HF model ("hf_model"), which recipes/pearl/serve_judge.sh serves.
#
#   bash recipes/pearl/run_qwen3_32b_judge_sft.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_32b_judge_sft.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# ---- user-adjustable ----
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-32B}
DATA_DIR=${DATA_DIR:-$HOME/data}
TRAIN_FILES=${TRAIN_FILES:-$DATA_DIR/judge_sft/train.parquet}
VAL_FILES=${VAL_FILES:-$DATA_DIR/judge_sft/val.parquet}
NNODES=${NNODES:-2}
NGPUS_PER_NODE=${NGPUS_PER_NODE:-8}
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
MASTER_PORT=${MASTER_PORT:-29500}
OFFLOAD=${OFFLOAD:-False}

train_batch_size=${TRAIN_BATCH_SIZE:-256}
lr=${LR:-5e-6}
# Rubric (~3.5k tokens) + dialogue (up to ~9k for 15 turns) + judgement (~1.5k).
max_length=${MAX_LENGTH:-16384}
max_token_len_per_gpu=${MAX_TOKEN_LEN_PER_GPU:-32768}
sp_size=${SP_SIZE:-2}
total_epochs=${TOTAL_EPOCHS:-1}
logger=${LOGGER:-'["console"]'}
project_name=${PROJECT_NAME:-pearl_verl}
experiment_name=${EXPERIMENT_NAME:-qwen3_32b_judge_sft}
save_dir=${SAVE_DIR:-checkpoints/$project_name/$experiment_name}
# ---- end user-adjustable ----

DATA=(
    data.train_files="$TRAIN_FILES"
    data.val_files="$VAL_FILES"
    data.messages_key=messages
    data.enable_thinking_key=enable_thinking
    data.train_batch_size=${train_batch_size}
    data.micro_batch_size_per_gpu=1
    data.use_dynamic_bsz=True
    data.max_token_len_per_gpu=${max_token_len_per_gpu}
    data.max_length=${max_length}
    data.truncation=error
    data.pad_mode=no_padding
)

MODEL=(
    model.path="$MODEL_PATH"
    model.enable_gradient_checkpointing=True
    model.use_remove_padding=True
)

ENGINE=(
    engine.strategy=fsdp2
    engine.param_offload=${OFFLOAD}
    engine.optimizer_offload=${OFFLOAD}
    engine.ulysses_sequence_parallel_size=${sp_size}
)

OPTIM=(
    optim.optimizer=AdamW
    optim.lr=${lr}
    optim.lr_scheduler_type=constant
    optim.lr_warmup_steps_ratio=0.0
    optim.clip_grad=1.0
)

TRAINER=(
    trainer.logger="${logger}"
    trainer.project_name=${project_name}
    trainer.experiment_name=${experiment_name}
    trainer.default_local_dir="${save_dir}"
    trainer.total_epochs=${total_epochs}
    trainer.nnodes=${NNODES}
    trainer.n_gpus_per_node=${NGPUS_PER_NODE}
    trainer.save_freq=after_each_epoch
    trainer.test_freq=after_each_epoch
    checkpoint.save_contents='["model","optimizer","extra","hf_model"]'
)

run_or_print torchrun --nnodes="${NNODES}" --nproc_per_node="${NGPUS_PER_NODE}" --node_rank="${NODE_RANK}" \
    --master_addr="${MASTER_ADDR}" --master_port="${MASTER_PORT}" -m verl.trainer.sft_trainer \
    "${DATA[@]}" "${MODEL[@]}" "${ENGINE[@]}" "${OPTIM[@]}" "${TRAINER[@]}" "${RECIPE_ARGS[@]}"
