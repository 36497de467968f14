#!/usr/bin/env bash
# verl's SFT trainer (FSDP2, torchrun), shared by the tutor cold-start and the judge SFT recipes (sourced,
# not run): full finetune, one epoch, AdamW at a fixed 5e-6, global batch 256, as the paper's appendix states.
#
# What every PEARL SFT run shares (the chat column, AdamW at a constant rate, the Hugging Face export) is the
# pearl_sft config in pearl_verl/verl_plugin/config/, which train-local's cold start reads too (as pearl_sft_cpu);
# CONFIG names it. What this file adds is each run's: sizes, rate, paths, the GPU-only engine settings.
#
# A recipe sets its own defaults first (`: "${MAX_LENGTH:=8192}"`), then sources this file; the user's
# environment wins over both. Leaves arrays CONFIG (first), DATA, MODEL, ENGINE, OPTIM, TRAINER and run_sft.

# ---- user-adjustable ----
: "${DATA_DIR:=$HOME/data}"
: "${NNODES:=1}"
: "${NGPUS_PER_NODE:=8}"
: "${NODE_RANK:=0}"                      # multi-node: the same command on every node, NODE_RANK=0..NNODES-1
: "${MASTER_ADDR:=127.0.0.1}"
: "${MASTER_PORT:=29500}"
: "${OFFLOAD:=False}"                    # parameters and optimizer state on CPU (fits 80 GB GPUs, slower)
: "${TRAIN_BATCH_SIZE:=256}"
: "${LR:=5e-6}"
: "${SP_SIZE:=1}"
: "${TOTAL_EPOCHS:=1}"
: "${LOGGER:=[\"console\"]}"
: "${PROJECT_NAME:=pearl_verl}"
: "${MODEL_PATH:?the recipe sets MODEL_PATH before sourcing lib/sft.sh}"
: "${TRAIN_FILES:?the recipe sets TRAIN_FILES before sourcing lib/sft.sh}"
: "${VAL_FILES:?the recipe sets VAL_FILES before sourcing lib/sft.sh}"
: "${MAX_LENGTH:?the recipe sets MAX_LENGTH before sourcing lib/sft.sh}"
: "${MAX_TOKEN_LEN_PER_GPU:?the recipe sets MAX_TOKEN_LEN_PER_GPU before sourcing lib/sft.sh}"
: "${EXPERIMENT_NAME:?the recipe sets EXPERIMENT_NAME before sourcing lib/sft.sh}"
: "${SAVE_DIR:=checkpoints/$PROJECT_NAME/$EXPERIMENT_NAME}"
# ---- end user-adjustable ----

CONFIG=(--config-path=pkg://pearl_verl.verl_plugin.config --config-name=pearl_sft)

DATA=(
    data.train_files="$TRAIN_FILES"
    data.val_files="$VAL_FILES"
    data.train_batch_size=${TRAIN_BATCH_SIZE}
    data.micro_batch_size_per_gpu=1
    data.use_dynamic_bsz=True
    data.max_token_len_per_gpu=${MAX_TOKEN_LEN_PER_GPU}
    data.max_length=${MAX_LENGTH}
    data.truncation=error
)

MODEL=(
    model.path="$MODEL_PATH"
    model.enable_gradient_checkpointing=True
    model.use_remove_padding=True
)

ENGINE=(
    engine.param_offload=${OFFLOAD}
    engine.optimizer_offload=${OFFLOAD}
    engine.ulysses_sequence_parallel_size=${SP_SIZE}
)

OPTIM=(
    optim.lr=${LR}
)

TRAINER=(
    trainer.logger="${LOGGER}"
    trainer.project_name=${PROJECT_NAME}
    trainer.experiment_name=${EXPERIMENT_NAME}
    trainer.default_local_dir="${SAVE_DIR}"
    trainer.total_epochs=${TOTAL_EPOCHS}
    trainer.nnodes=${NNODES}
    trainer.n_gpus_per_node=${NGPUS_PER_NODE}
    trainer.save_freq=after_each_epoch
    trainer.test_freq=after_each_epoch
)

# run_sft: launch verl's SFT trainer on this node with the arrays above, the recipe's and the user's overrides.
run_sft() {
    run_or_print torchrun --nnodes="${NNODES}" --nproc_per_node="${NGPUS_PER_NODE}" --node_rank="${NODE_RANK}" \
        --master_addr="${MASTER_ADDR}" --master_port="${MASTER_PORT}" -m verl.trainer.sft_trainer \
        "${CONFIG[@]}" "${DATA[@]}" "${MODEL[@]}" "${ENGINE[@]}" "${OPTIM[@]}" "${TRAINER[@]}" "${RECIPE_ARGS[@]}"
}
