#!/usr/bin/env bash
# GLUE fine-tuning with the seed recipe (Google/HF run_glue defaults): AdamW lr 2e-5, 3 epochs,
# 10% linear warmup, seq 128, batch 32.
#   usage: scripts/run_glue.sh TASK [extra finetune args]   TASK: mrpc rte cola sst2 stsb qqp qnli mnli wnli
#   DATASET_DIR     the task's directory with train.tsv, dev.tsv (default: data/glue/<TASK dir>)
#   CHECKPOINT_DIR  checkpoint to start from: model.safetensors + config.json (+ vocab.txt) (required)
#   VOCAB           vocab.txt (default: $CHECKPOINT_DIR/vocab.txt)
#   OUTPUT_DIR      default runs/glue_<TASK>
#   PRECISION       fp32, bf16 or fp16 (fp16: CUDA only; default bf16)
#   BATCH_SIZE      sequences per optimizer step (default 32)
#   MICRO_BATCH     sequences per forward/backward (default: BATCH_SIZE)
#   EPOCHS          default 3
#   LEARNING_RATE   default 2e-5
#   SEED            default 42
# A test.tsv in DATASET_DIR is predicted into OUTPUT_DIR/test_predictions.tsv (GLUE submission format).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TASK=${1:?usage: scripts/run_glue.sh TASK (mrpc rte cola sst2 stsb qqp qnli mnli wnli)}
shift
case "$TASK" in
  cola) DIR=CoLA ;; sst2|sst-2) DIR=SST-2 ;; stsb|sts-b) DIR=STS-B ;; *) DIR=$(echo "$TASK" | tr a-z A-Z) ;;
esac
BIN=${BIN:-$ROOT/build/bert-train}
DATASET_DIR=${DATASET_DIR:-data/glue/$DIR}
: "${CHECKPOINT_DIR:?set CHECKPOINT_DIR to the checkpoint to fine-tune (model.safetensors + config.json)}"
VOCAB=${VOCAB:-$CHECKPOINT_DIR/vocab.txt}
OUTPUT_DIR=${OUTPUT_DIR:-runs/glue_$TASK}
PRECISION=${PRECISION:-bf16}
BATCH_SIZE=${BATCH_SIZE:-32}
MICRO_BATCH=${MICRO_BATCH:-$BATCH_SIZE}
EPOCHS=${EPOCHS:-3}
LEARNING_RATE=${LEARNING_RATE:-2e-5}
SEED=${SEED:-42}
TEST_ARGS=()
if [[ "$TASK" == mnli ]]; then TEST=$DATASET_DIR/test_matched.tsv; else TEST=$DATASET_DIR/test.tsv; fi
[[ -f "$TEST" ]] && TEST_ARGS=(--set "finetune.test_file=$TEST")
exec "$BIN" finetune --task "$TASK" --config "$ROOT"/configs/finetune_mrpc_base.json \
  --data-dir "$DATASET_DIR" --vocab "$VOCAB" --init-checkpoint "$CHECKPOINT_DIR" --output-dir "$OUTPUT_DIR" \
  --precision "$PRECISION" --epochs "$EPOCHS" --seed "$SEED" --max-seq-length 128 \
  --set optimizer.learning_rate="$LEARNING_RATE" \
  --set train.global_batch_size="$BATCH_SIZE" --set train.micro_batch_size="$MICRO_BATCH" \
  "${TEST_ARGS[@]}" "$@"
