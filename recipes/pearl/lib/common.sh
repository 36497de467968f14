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

# require_judge_calibration BASE_URL MODEL STRUCTURED_OUTPUT: before any GPU time goes into training, the served
# judge scores the shipped contrast pairs (pearl-verl judge-check), then MRBench's candidate tutor turns against its
# teachers' labels (judge-check --human: the first JUDGE_HUMAN_LIMIT=40 test conversations, or JUDGE_HUMAN_FILE);
# a judge that fails either stops the recipe. JUDGE_MIN_AGREEMENT and JUDGE_HUMAN_MIN_AGREEMENT set the floors
# (0.75 and 0.5, docs/judge.md); JUDGE_CHECK=0 skips both checks, JUDGE_HUMAN_CHECK=0 the second.
require_judge_calibration() {
    local url=$1 model=$2 structured=$3
    if (( DRY_RUN )) || [[ "${JUDGE_CHECK:-1}" == 0 ]]; then return 0; fi
    if ! pearl-verl judge-check --base-url "$url" --model "$model" --structured-output "$structured" \
            --min-agreement "${JUDGE_MIN_AGREEMENT:-0.75}" --no-progress; then
        echo "error: the judge at ${url} cannot rank the calibration pairs (above): its rewards would train on noise." >&2
        echo "       Serve a stronger or finetuned judge, or set JUDGE_CHECK=0 to train on it anyway." >&2
        exit 1
    fi
    if [[ "${JUDGE_HUMAN_CHECK:-1}" == 0 ]]; then return 0; fi
    if ! pearl-verl judge-check --human ${JUDGE_HUMAN_FILE:+"$JUDGE_HUMAN_FILE"} --base-url "$url" --model "$model" \
            --structured-output "$structured" --limit "${JUDGE_HUMAN_LIMIT:-40}" \
            --min-agreement "${JUDGE_HUMAN_MIN_AGREEMENT:-0.5}" --no-progress; then
        echo "error: the judge at ${url} does not order tutor turns as teachers do (above): it would train away" >&2
        echo "       from them. Serve a stronger or finetuned judge, or set JUDGE_HUMAN_CHECK=0 to train on it anyway." >&2
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

# checked_run KIND: make MODEL_PATH (KIND: smollm2 or tiny) and DATA_DIR when absent, run COMMAND with verl's file
# logger writing OUT_DIR/metrics.jsonl, then the smoke check's verdict on those metrics and the last checkpoint
# (python -m pearl_verl.verl_plugin.smoke check; exit 1 on a failed check).
checked_run() {
    local kind=$1 start
    [[ -f "$MODEL_PATH/config.json" ]] || python3 -m pearl_verl.verl_plugin.smoke model "$MODEL_PATH" --kind "$kind"
    [[ -f "$DATA_DIR/train.parquet" ]] || pearl-verl prepare-data mathdial=@fixture -o "$DATA_DIR" --conditions-per-problem 2
    mkdir -p "$OUT_DIR"
    export VERL_FILE_LOGGER_PATH="$OUT_DIR/metrics.jsonl"
    rm -f "$VERL_FILE_LOGGER_PATH"
    start=$SECONDS
    echo "+ ${COMMAND[*]}" >&2
    "${COMMAND[@]}" || echo "the run exited with an error; the checks below say what is missing" >&2
    echo "the run took $(( SECONDS - start )) s" >&2
    python3 -m pearl_verl.verl_plugin.smoke check --metrics "$VERL_FILE_LOGGER_PATH" --initial "$MODEL_PATH" \
        --checkpoints "$OUT_DIR/checkpoints" --steps "$STEPS"
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
