# Sourced by scripts/run_pretrain_phase1.sh and run_pretrain_phase2.sh: builds the `bert-train
# pretrain` command line for one phase from the environment those scripts document and runs it.
#   run_pretrain_phase PHASE   (1: seq-128 configs, 2: seq-512 configs)
# Uses BIN, DATASET_DIR, EVAL_DIR, OUTPUT_DIR, CHECKPOINT_DIR, PRECISION, BATCH_SIZE, MODEL,
# EXTRA_ARGS. A run directory that already holds a checkpoint is resumed (--resume latest);
# otherwise CHECKPOINT_DIR, when set, gives the starting weights (--init-checkpoint).
run_pretrain_phase() {
  local phase=$1 config
  local bin=${BIN:-build/bert-train} precision=${PRECISION:-bf16} model=${MODEL:-tiny}
  case "$phase:$model" in
    1:tiny) config=configs/pretrain_tiny_128_lamb.json ;;
    1:base) config=configs/pretrain_base_128_phase1.json ;;
    1:large) config=configs/pretrain_large_128_phase1.json ;;
    2:tiny) config=configs/pretrain_tiny_512_phase2.json ;;
    2:base) config=configs/pretrain_base_512_phase2.json ;;
    2:large) config=configs/pretrain_large_512_phase2.json ;;
    *) echo "run_pretrain_phase$phase.sh: MODEL must be tiny, base or large (got '$model')" >&2; return 2 ;;
  esac
  local args=(pretrain --config "$config" --data-dir "$DATASET_DIR" --output-dir "$OUTPUT_DIR" --precision "$precision")
  if [ -n "${BATCH_SIZE:-}" ]; then args+=(--set "train.micro_batch_size=$BATCH_SIZE"); fi
  if [ -n "${EVAL_DIR:-}" ]; then args+=(--eval-dir "$EVAL_DIR"); fi
  if [ -e "$OUTPUT_DIR/checkpoints/latest" ]; then
    args+=(--resume latest)
  elif [ -n "${CHECKPOINT_DIR:-}" ]; then
    args+=(--init-checkpoint "$CHECKPOINT_DIR")
  fi
  # shellcheck disable=SC2086
  exec "$bin" "${args[@]}" ${EXTRA_ARGS:-}
}
