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
# Multi-node: run the same command on every node with NODE_RANK=0..NNODES-1 and MASTER_ADDR set.
#
#   bash recipes/pearl/run_qwen3_30b_a3b_instruct_sft.sh [extra hydra overrides]
#   bash recipes/pearl/run_qwen3_30b_a3b_instruct_sft.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# ---- user-adjustable ----
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-30B-A3B-Instruct-2507}
DATA_DIR=${DATA_DIR:-$HOME/data}
TRAIN_FILES=${TRAIN_FILES:-$DATA_DIR/pearl_sft/train.parquet}
VAL_FILES=${VAL_FILES:-$DATA_DIR/pearl_sft/val.parquet}
NNODES=${NNODES:-1}
NGPUS_PER_NODE=${NGPUS_PER_NODE:-8}
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
MASTER_PORT=${MASTER_PORT:-29500}
OFFLOAD=${OFFLOAD:-False}

train_batch_size=${TRAIN_BATCH_SIZE:-256}
lr=${LR:-5e-6}
# Tutor prompt with the reference solution (~0.6-1.5k tokens) + up to 15 tutor and student turns.
max_length=${MAX_LENGTH:-8192}
max_token_len_per_gpu=${MAX_TOKEN_LEN_PER_GPU:-16384}
sp_size=${SP_SIZE:-1}
total_epochs=${TOTAL_EPOCHS:-1}
logger=${LOGGER:-'["console"]'}
project_name=${PROJECT_NAME:-pearl_verl}
experiment_name=${EXPERIMENT_NAME:-qwen3_30b_a3b_instruct_cold_start_sft}
save_dir=${SAVE_DIR:-checkpoints/$project_name/$experiment_name}
# ---- end user-adjustable ----

DATA=(
    data.train_files="$TRAIN_FILES"
    data.val_files="$VAL_FILES"
    data.messages_key=messages
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
    model.lora_rank=0
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
    optim.weight_decay=0.01
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
