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

# run_or_print CMD...: print one argument per line under --dry-run, else replace this shell with CMD.
run_or_print() {
    if (( DRY_RUN )); then
        printf '%s\n' "$@"
        exit 0
    fi
    echo "+ $*" >&2
    exec "$@"
}
