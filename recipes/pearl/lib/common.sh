#!/usr/bin/env bash
# Shared helpers of the PEARL recipes (sourced, not run).

# --dry-run as the first argument: print the final command instead of running it.
DRY_RUN=0
if [[ "${1:-}" == "--dry-run" ]]; then DRY_RUN=1; shift; fi
RECIPE_ARGS=("$@")

# require_endpoint NAME BASE_URL: fail early, with the fix, when an OpenAI-compatible server is down.
require_endpoint() {
    local name=$1 url=$2
    if (( DRY_RUN )); then return 0; fi
    if ! curl -sf --max-time 10 "${url%/}/models" > /dev/null; then
        echo "error: the ${name} endpoint ${url} is not reachable (GET ${url%/}/models failed)." >&2
        echo "       Start it first (recipes/pearl/serve_${name}.sh) or point ${name^^}_BASE_URL at a running server." >&2
        exit 1
    fi
}

# role_settings SECTION BASE_URL MODEL: the offline stand-in when BASE_URL is empty, else the served endpoint.
role_settings() {
    local section=$1 url=$2 model=$3
    if [[ -z "$url" ]]; then
        echo "+$section.backend=offline"
    else
        echo "+$section.backend=llm +$section.base_url=$url +$section.model=$model"
    fi
}

# run_or_print CMD...: print one argument per line under --dry-run, else replace this shell with CMD.
run_or_print() {
    if (( DRY_RUN )); then
        printf '%s\n' "$@"
        exit 0
    fi
    echo "+ $*" >&2
    exec "$@"
}

# serve_vllm MODEL [FLAG...]: `vllm serve MODEL` on HOST:PORT as SERVED_NAME with TP, MAX_MODEL_LEN, GPU_MEM_UTIL
# (default 0.90) and MAX_NUM_SEQS (default 256), the recipe's FLAGs, then the user's. Prefix caching is on: every
# student or judge request starts with the same instructions, computed once.
serve_vllm() {
    local model=$1
    shift
    if (( ! DRY_RUN )) && ! command -v vllm > /dev/null; then
        echo "error: vllm is not installed; install it as verl's GPU instructions say (pip install 'verl[vllm]')." >&2
        exit 1
    fi
    run_or_print vllm serve "$model" \
        --served-model-name "$SERVED_NAME" \
        --host "${HOST:-0.0.0.0}" --port "$PORT" \
        --tensor-parallel-size "$TP" \
        --max-model-len "$MAX_MODEL_LEN" \
        --gpu-memory-utilization "${GPU_MEM_UTIL:-0.90}" \
        --max-num-seqs "${MAX_NUM_SEQS:-256}" \
        --enable-prefix-caching \
        "$@" "${RECIPE_ARGS[@]}"
}
