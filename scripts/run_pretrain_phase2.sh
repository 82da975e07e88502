#!/usr/bin/env bash
# Phase 2 pretraining (seq 512) from the phase-1 weights (new optimizer and schedule, as NVIDIA's
# phase 2 does). Environment:
#   DATASET_DIR     HDF5 shards at seq 512 (default: data/phase2)
#   EVAL_DIR        optional held-out shards
#   OUTPUT_DIR      (default: runs/phase2); resumes phase 2 itself if it holds a checkpoint
#   CHECKPOINT_DIR  the phase-1 checkpoint (default: runs/phase1/checkpoints/latest)
#   PRECISION       fp32 | bf16 | fp16 (default: bf16)
#   BATCH_SIZE      micro-batch per worker (default: the config's)
#   MODEL           tiny | base | large (default: tiny)
#   EXTRA_ARGS      more bert-train flags
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bert-train}
DATASET_DIR=${DATASET_DIR:-data/phase2}
OUTPUT_DIR=${OUTPUT_DIR:-runs/phase2}
CHECKPOINT_DIR=${CHECKPOINT_DIR:-runs/phase1/checkpoints/latest}
PRECISION=${PRECISION:-bf16}
MODEL=${MODEL:-tiny}
case "$MODEL" in
  tiny) CONFIG=configs/pretrain_tiny_512_phase2.json ;;
  base) CONFIG=configs/pretrain_base_512_phase2.json ;;
  large) CONFIG=configs/pretrain_large_512_phase2.json ;;
  *) echo "run_pretrain_phase2.sh: MODEL must be tiny, base or large (got '$MODEL')" >&2; exit 2 ;;
esac
args=(pretrain --config "$CONFIG" --data-dir "$DATASET_DIR" --output-dir "$OUTPUT_DIR" --precision "$PRECISION")
[ -n "${BATCH_SIZE:-}" ] && args+=(--set "train.micro_batch_size=$BATCH_SIZE")
[ -n "${EVAL_DIR:-}" ] && args+=(--eval-dir "$EVAL_DIR")
if [ -e "$OUTPUT_DIR/checkpoints/latest" ]; then
  args+=(--resume latest)
else
  args+=(--init-checkpoint "$CHECKPOINT_DIR")
fi
# shellcheck disable=SC2086
exec "$BIN" "${args[@]}" ${EXTRA_ARGS:-}
