#!/usr/bin/env bash
# The PEARL RL settings (paper §3.3) shared by the FSDP2 and Megatron recipes (sourced, not run): the
# pearl_tutor agent loop with the served student, the pearl_judge reward with the served judge, the PEARL
# estimator in pearl_sync mode (pearl_verl/verl_plugin/config/pearl_gspo.yaml), on top of lib/gspo.sh. A recipe
# sets EXPERIMENT_NAME and its engine's settings; the user's environment overrides any default below.
#
# Adds to lib/gspo.sh's arrays, and leaves AGENT and REWARD for the recipe's command.

# ---- user-adjustable ----
: "${MODEL_PATH:=checkpoints/pearl_verl/qwen3_30b_a3b_cold_start_sft/huggingface}"
: "${DATA_DIR:=$HOME/data/pearl}"       # `pearl-verl prepare-data` output: train/val parquet with student conditions
: "${STUDENT_BASE_URL:=http://localhost:8001/v1}"
: "${STUDENT_MODEL:=pearl-student}"
: "${JUDGE_BASE_URL:=http://localhost:8000/v1}"
: "${JUDGE_MODEL:=pearl-judge}"
# the planner's and the judge's JSON held to its schema by vLLM's structured outputs (`none` for a
# server without them): on a real server a weak model's replies went from 0% to 100% parsed (BENCHMARKS.md)
: "${STRUCTURED_OUTPUT:=json_schema}"
: "${TRAIN_BATCH_SIZE:=64}"             # problems per step; x group size 8 = 512 dialogues
: "${PPO_MINI_BATCH_SIZE:=16}"
: "${MAX_PROMPT_LENGTH:=4096}"          # tutor instruction + problem + reference + opening
: "${MAX_RESPONSE_LENGTH:=16384}"       # all tutor AND student tokens of up to 15 turns
: "${MAX_TOKENS_PER_TURN:=6144}"        # the paper's maximum generation length
: "${PPO_MAX_TOKEN_LEN_PER_GPU:=24576}"
: "${LOGGER:=[\"console\",\"wandb\"]}"
# ---- end user-adjustable ----

TRAIN_FILES="['$DATA_DIR/train.parquet']"
VAL_FILES="['$DATA_DIR/val.parquet']"
PEARL_CONFIG_NAME=pearl_gspo            # + the agent loop, the judge reward, pearl_sync (config/parts/method.yaml)
source "$(dirname "${BASH_SOURCE[0]}")/gspo.sh"

require_endpoint student "$STUDENT_BASE_URL"
require_endpoint judge "$JUDGE_BASE_URL"
require_judge_calibration "$JUDGE_BASE_URL" "$JUDGE_MODEL" "$STRUCTURED_OUTPUT"

ROLLOUT+=(
    actor_rollout_ref.rollout.top_k=50
    actor_rollout_ref.rollout.val_kwargs.n=1
)

AGENT=(  # up to 15 tutor turns, the method's (pearl.agent.max_tutor_turns)
    +pearl.agent.max_tokens_per_turn=${MAX_TOKENS_PER_TURN}
    +pearl.student.backend=llm
    +pearl.student.base_url=${STUDENT_BASE_URL}
    +pearl.student.model=${STUDENT_MODEL}
    +pearl.student.structured_output=${STRUCTURED_OUTPUT}
)

REWARD=(
    +reward.reward_kwargs.backend=llm
    +reward.reward_kwargs.base_url=${JUDGE_BASE_URL}
    +reward.reward_kwargs.model=${JUDGE_MODEL}
    +reward.reward_kwargs.structured_output=${STRUCTURED_OUTPUT}
)
