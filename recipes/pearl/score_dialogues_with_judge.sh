#!/usr/bin/env bash
# Score a JSONL of dialogues with the served PEARL judge | CPU client; the judge needs its own GPUs
# (recipes/pearl/serve_judge.sh). Incremental and resumable: re-run the same command after an
# interruption; add --retry-failed to judge again the dialogues whose judgement failed.
#
#   INPUT=dialogues.jsonl OUTPUT=scores.jsonl bash recipes/pearl/score_dialogues_with_judge.sh [extra flags]
#   ... --dry-run   # print the command only (no endpoint check)
set -xeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ---- user-adjustable ----
INPUT=${INPUT:?set INPUT to a JSONL of dialogues (one EpisodeRecord per line)}
OUTPUT=${OUTPUT:?set OUTPUT to the results JSONL (appended and resumed)}
JUDGE_BASE_URL=${JUDGE_BASE_URL:-http://localhost:8000/v1}
JUDGE_MODEL=${JUDGE_MODEL:-pearl-judge}
CONCURRENCY=${CONCURRENCY:-64}
SAMPLES=${SAMPLES:-1}
STRUCTURED_OUTPUT=${STRUCTURED_OUTPUT:-json_schema}  # vLLM's structured outputs; `none` for a server without them
# ---- end user-adjustable ----

require_endpoint judge "$JUDGE_BASE_URL"

run_or_print pearl-verl judge "$INPUT" --output "$OUTPUT" \
    --base-url "$JUDGE_BASE_URL" --model "$JUDGE_MODEL" \
    --concurrency "$CONCURRENCY" --samples "$SAMPLES" --structured-output "$STRUCTURED_OUTPUT" \
    "${RECIPE_ARGS[@]}"
