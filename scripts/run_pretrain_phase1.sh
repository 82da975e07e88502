#!/usr/bin/env bash
# Phase 1 pretraining (seq 128), in the style of NVIDIA's run_pretraining.sh. Environment:
#   DATASET_DIR     HDF5 shards at seq 128 (default: data/phase1)
#   EVAL_DIR        optional held-out shards
#   OUTPUT_DIR      logs, metrics and checkpoints (default: runs/phase1); resumes if it holds a checkpoint
#   CHECKPOINT_DIR  optional: weights to start from (--init-checkpoint), any format `convert` reads
#   PRECISION       fp32 | bf16 | fp16 (default: bf16)
#   BATCH_SIZE      micro-batch per worker (default: the config's)
#   MODEL           tiny | base | large (default: tiny)
#   EXTRA_ARGS      more bert-train flags
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bert-train}
DATASET_DIR=${DATASET_DIR:-data/phase1}
OUTPUT_DIR=${OUTPUT_DIR:-runs/phase1}
PRECISION=${PRECISION:-bf16}
MODEL=${MODEL:-tiny}
case "$MODEL" in
  tiny) CONFIG=configs/pretrain_tiny_128_lamb.json ;;
  base) CONFIG=configs/pretrain_base_128_phase1.json ;;
  large) CONFIG=configs/pretrain_large_128_phase1.json ;;
  *) echo "run_pretrain_phase1.sh: MODEL must be tiny, base or large (got '$MODEL')" >&2; exit 2 ;;
esac
args=(pretrain --config "$CONFIG" --data-dir "$DATASET_DIR" --output-dir "$OUTPUT_DIR" --precision "$PRECISION")
[ -n "${BATCH_SIZE:-}" ] && args+=(--set "train.micro_batch_size=$BATCH_SIZE")
[ -n "${EVAL_DIR:-}" ] && args+=(--eval-dir "$EVAL_DIR")
if [ -e "$OUTPUT_DIR/checkpoints/latest" ]; then
  args+=(--resume latest)
elif [ -n "${CHECKPOINT_DIR:-}" ]; then
  args+=(--init-checkpoint "$CHECKPOINT_DIR")
fi
# shellcheck disable=SC2086
exec "$BIN" "${args[@]}" ${EXTRA_ARGS:-}
