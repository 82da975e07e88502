#!/usr/bin/env bash
# SQuAD v1.1 fine-tuning with the seed recipe (NVIDIA run_squad / Google run_squad defaults):
# 2 epochs, AdamW lr 3e-5, 10% linear warmup, seq 384, stride 128, query 64, batch 32.
#   DATASET_DIR     holds train-v1.1.json and dev-v1.1.json (default: data/squad)
#   CHECKPOINT_DIR  checkpoint to start from: model.safetensors + config.json (+ vocab.txt) (required)
#   VOCAB           vocab.txt (default: $CHECKPOINT_DIR/vocab.txt)
#   OUTPUT_DIR      default runs/squad
#   PRECISION       fp32, bf16 or fp16 (fp16: CUDA only; default bf16)
#   BATCH_SIZE      sequences per optimizer step (default 32)
#   MICRO_BATCH     sequences per forward/backward (default 8 when it divides BATCH_SIZE)
#   EPOCHS          default 2
#   LEARNING_RATE   default 3e-5
#   SEED            default 42
#   TEST_FILE       optional SQuAD JSON the best model predicts into OUTPUT_DIR/test/ (predictions.json,
#                   nbest_predictions.json; scored too when it has answers), like run_squad.py --do_predict
# Extra arguments are passed to `bert-train finetune` (e.g. --set finetune.version_2_with_negative=true).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/build/bert-train}
DATASET_DIR=${DATASET_DIR:-data/squad}
: "${CHECKPOINT_DIR:?set CHECKPOINT_DIR to the checkpoint to fine-tune (model.safetensors + config.json)}"
VOCAB=${VOCAB:-$CHECKPOINT_DIR/vocab.txt}
OUTPUT_DIR=${OUTPUT_DIR:-runs/squad}
PRECISION=${PRECISION:-bf16}
BATCH_SIZE=${BATCH_SIZE:-32}
if (( BATCH_SIZE % 8 == 0 )); then MICRO_BATCH=${MICRO_BATCH:-8}; else MICRO_BATCH=${MICRO_BATCH:-$BATCH_SIZE}; fi
EPOCHS=${EPOCHS:-2}
LEARNING_RATE=${LEARNING_RATE:-3e-5}
SEED=${SEED:-42}
TEST_ARGS=()
[[ -n "${TEST_FILE:-}" ]] && TEST_ARGS=(--set "finetune.test_file=$TEST_FILE")
exec "$BIN" finetune --task squad --config "$ROOT"/configs/finetune_squad_base.json \
  --data-dir "$DATASET_DIR" --vocab "$VOCAB" --init-checkpoint "$CHECKPOINT_DIR" --output-dir "$OUTPUT_DIR" \
  --precision "$PRECISION" --epochs "$EPOCHS" --seed "$SEED" --max-seq-length 384 \
  --set finetune.doc_stride=128 --set finetune.max_query_length=64 \
  --set optimizer.learning_rate="$LEARNING_RATE" \
  --set train.global_batch_size="$BATCH_SIZE" --set train.micro_batch_size="$MICRO_BATCH" \
  "${TEST_ARGS[@]}" "$@"
