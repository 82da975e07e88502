#!/usr/bin/env bash
# The main job on the bundled demo corpus (scripts/demo/corpus.txt, generated for this project):
#   set up, build, train a WordPiece vocab, prepare seq-128 and seq-512 HDF5 shards,
#   pretrain phase 1 (seq 128), phase 2 (seq 512, initialised from phase 1), evaluate.
# Environment: OUT (default runs/quickstart), PHASE1_STEPS (800), PHASE2_STEPS (60), PRECISION (fp32).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BIN=${BIN:-build/bert-train}
OUT=${OUT:-runs/quickstart}
PHASE1_STEPS=${PHASE1_STEPS:-800}
PHASE2_STEPS=${PHASE2_STEPS:-60}
PRECISION=${PRECISION:-fp32}
CORPUS=scripts/demo/corpus.txt
start=$(date +%s)
mkdir -p "$OUT/text"

echo "== 0/6 machine"
"$BIN" info | tee "$OUT/info.txt" | sed -n '1,3p;/Backends/,$p'

echo "== 1/6 split the demo corpus: 540 documents to train on, 60 held out"
awk -v RS= -v ORS='\n\n' 'NR<=540' "$CORPUS" > "$OUT/text/train.txt"
awk -v RS= -v ORS='\n\n' 'NR>540' "$CORPUS" > "$OUT/text/heldout.txt"

echo "== 2/6 train a WordPiece vocabulary on the training text"
"$BIN" vocab --input "$OUT/text/train.txt" --output-dir "$OUT/vocab" --vocab-size 2000 --min-frequency 2
V=$(wc -l < "$OUT/vocab/vocab.txt")

echo "== 3/6 prepare masked HDF5 shards (Google's algorithm): seq 128 and seq 512"
"$BIN" prepare --input "$OUT/text/train.txt" --vocab "$OUT/vocab/vocab.txt" --output-dir "$OUT/data/train128" \
  --max-seq-length 128 --max-predictions-per-seq 20 --dupe-factor 5 --num-shards 4
"$BIN" prepare --input "$OUT/text/heldout.txt" --vocab "$OUT/vocab/vocab.txt" --output-dir "$OUT/data/eval128" \
  --max-seq-length 128 --max-predictions-per-seq 20 --dupe-factor 2 --num-shards 1
"$BIN" prepare --input "$OUT/text/train.txt" --vocab "$OUT/vocab/vocab.txt" --output-dir "$OUT/data/train512" \
  --max-seq-length 512 --max-predictions-per-seq 80 --dupe-factor 2 --num-shards 2

echo "== 4/6 phase 1: BERT-tiny, seq 128, LAMB ($PHASE1_STEPS steps)"
"$BIN" pretrain --config configs/pretrain_tiny_128_lamb.json --set model.vocab_size="$V" \
  --data-dir "$OUT/data/train128" --eval-dir "$OUT/data/eval128" --set eval.at_start=true \
  --output-dir "$OUT/phase1" --max-steps "$PHASE1_STEPS" --precision "$PRECISION" --set logging.log_every=25

echo "== 5/6 phase 2: seq 512 from the phase-1 weights ($PHASE2_STEPS steps)"
"$BIN" pretrain --config configs/pretrain_tiny_512_phase2.json --set model.vocab_size="$V" \
  --data-dir "$OUT/data/train512" --init-checkpoint "$OUT/phase1/checkpoints/latest" \
  --output-dir "$OUT/phase2" --max-steps "$PHASE2_STEPS" --precision "$PRECISION" --set logging.log_every=10

echo "== 6/6 evaluate the final model on the held-out documents"
"$BIN" evaluate --task pretrain --checkpoint "$OUT/phase2" --data-dir "$OUT/data/eval128" --output-dir "$OUT/eval"

untrained=$(grep -m1 '"eval_mlm_accuracy"' "$OUT/phase1/metrics.jsonl" | sed 's/.*"eval_mlm_accuracy":\([0-9.e-]*\).*/\1/')
final=$(sed -n 's/.*"eval_mlm_accuracy": *\([0-9.e-]*\).*/\1/p' "$OUT/eval/eval_results.json")
echo
echo "quickstart: done in $(( $(date +%s) - start )) s"
echo "  held-out masked-LM accuracy: untrained $untrained -> trained $final"
echo "  vocab        $OUT/vocab/vocab.txt ($V tokens)"
echo "  shards       $OUT/data/{train128,eval128,train512} (manifest.json in each)"
echo "  phase 1      $OUT/phase1 (train.log, metrics.jsonl, config.json, checkpoints/)"
echo "  phase 2      $OUT/phase2"
echo "  evaluation   $OUT/eval/eval_results.json"
