#!/usr/bin/env bash
# Serve the PEARL judge | Qwen3-32B (the finetuned judge) | vLLM OpenAI-compatible server |
# GPUs: 2 x 80 GB (TP=2) by default; 1 x 141 GB (H200) with TP=1; add replicas behind a load
# balancer for more throughput (one PEARL training step judges 128 prompts x 8 dialogues).
#
# Prefix caching is on: every judge request starts with the same rubric (~3.5k tokens), which is
# then computed once. Thinking is off by default: the judge answers with the JSON object directly
# (its parser also accepts and discards a leading <think> block).
# Training reaches it with
#   reward.reward_manager.name=pearl_judge +reward.reward_kwargs.base_url=http://<host>:${PORT}/v1 \
#   +reward.reward_kwargs.model=${SERVED_NAME}
# Set VLLM_API_KEY to require a key (then pass +reward.reward_kwargs.api_key_env=<NAME of a variable holding it>).
#
#   bash recipes/pearl/serve_judge.sh [extra vllm serve flags]
#   bash recipes/pearl/serve_judge.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ---- user-adjustable ----
# The finetuned judge: by default the HF export of the latest checkpoint of
# run_qwen3_32b_judge_sft.sh; Qwen/Qwen3-32B serves the untrained baseline.
SFT_DIR=${SFT_DIR:-checkpoints/pearl_verl/qwen3_32b_judge_sft}
JUDGE_MODEL_PATH=${JUDGE_MODEL_PATH:-}
SERVED_NAME=${SERVED_NAME:-pearl-judge}
PORT=${PORT:-8000}
TP=${TP:-2}
MAX_MODEL_LEN=${MAX_MODEL_LEN:-24576}
ENABLE_THINKING=${ENABLE_THINKING:-false}
# also HOST (0.0.0.0), GPU_MEM_UTIL (0.90), MAX_NUM_SEQS (256): lib/common.sh's serve_vllm
# ---- end user-adjustable ----

if [[ -z "$JUDGE_MODEL_PATH" ]]; then
    step=$(cat "$SFT_DIR/latest_checkpointed_iteration.txt" 2> /dev/null || true)
    JUDGE_MODEL_PATH=$SFT_DIR/global_step_${step:-N}/huggingface
    if (( ! DRY_RUN )) && [[ -z "$step" ]]; then
        echo "error: no judge checkpoint in $SFT_DIR (no latest_checkpointed_iteration.txt). Train one with" >&2
        echo "       recipes/pearl/run_qwen3_32b_judge_sft.sh, or set JUDGE_MODEL_PATH (e.g. Qwen/Qwen3-32B)." >&2
        exit 1
    fi
fi

serve_vllm "$JUDGE_MODEL_PATH" --default-chat-template-kwargs "{\"enable_thinking\": ${ENABLE_THINKING}}"
