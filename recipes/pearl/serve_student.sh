#!/usr/bin/env bash
# Serve the simulated student | Qwen3-30B-A3B-Instruct-2507 (as in the paper) | vLLM OpenAI-compatible server |
# GPUs: 1 x 80 GB (TP=1, bf16 weights ~61 GB) by default; TP=2 for longer contexts or more throughput.
#
# The PEARL simulator calls it for its planner, realiser and (rarely) refine roles, about 2 calls per
# student turn (docs/simulator.md). Training reaches it with
#   +pearl.student.backend=llm +pearl.student.base_url=http://<host>:${PORT}/v1 +pearl.student.model=${SERVED_NAME}
# Set VLLM_API_KEY to require a key (then pass +pearl.student.api_key_env=<NAME of a variable holding it>).
#
#   bash recipes/pearl/serve_student.sh [extra vllm serve flags]
#   bash recipes/pearl/serve_student.sh --dry-run   # print the command only
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ---- user-adjustable ----
STUDENT_MODEL_PATH=${STUDENT_MODEL_PATH:-Qwen/Qwen3-30B-A3B-Instruct-2507}
SERVED_NAME=${SERVED_NAME:-pearl-student}
PORT=${PORT:-8001}
TP=${TP:-1}
MAX_MODEL_LEN=${MAX_MODEL_LEN:-16384}
# also HOST (0.0.0.0), GPU_MEM_UTIL (0.90), MAX_NUM_SEQS (256): lib/common.sh's serve_vllm
# ---- end user-adjustable ----

serve_vllm "$STUDENT_MODEL_PATH"
