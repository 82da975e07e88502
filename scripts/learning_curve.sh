#!/usr/bin/env bash
# Learning, shown: pretrain a small BERT on wikitext-2 (validation split) on the CPU and record the
# held-out masked-LM accuracy curve against two baselines computed here on the same held-out data:
#   * untrained: the model at step 0 (the trainer's eval before the first step);
#   * unigram:   always predict the most frequent masked-LM label of the *training* shards.
# Steps: split the corpus into train / held-out articles (every HOLDOUT_EVERY-th article held out,
# articles start at ` = Title = ` lines), train a WordPiece vocab on the training articles,
# `prepare --input-format paragraphs` both parts, pretrain with --eval-dir, print the curve table.
# Environment:
#   CORPUS          wikitext text (default: ../shared/data/corpus/wikitext-2-valid.txt)
#   OUT             outputs (default: runs/learning_curve)
#   MODEL           tiny | mini (default: tiny)
#   STEPS           optimizer steps (default: 700)
#   BATCH           sequences per step (default: 32)
#   LR              LAMB peak learning rate (default: 0.01; warmup 10%, then poly decay to 0)
#   EVAL_POINTS     evaluations during the run, evenly spaced (default: 8)
#   HOLDOUT_EVERY   hold out every N-th article (default: 10)
#   VOCAB_SIZE      WordPiece vocabulary size (default: 8192)
#   THREADS         intra-op threads (default: 1)
#   SEED            training seed (default: 42)
# Needs /usr/bin/python3 with h5py (the unigram baseline reads masked_lm_ids from the shards).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bert-train}
CORPUS=${CORPUS:-../shared/data/corpus/wikitext-2-valid.txt}
OUT=${OUT:-runs/learning_curve}
MODEL=${MODEL:-tiny}
STEPS=${STEPS:-700}
BATCH=${BATCH:-32}
LR=${LR:-0.01}
EVAL_POINTS=${EVAL_POINTS:-8}
HOLDOUT_EVERY=${HOLDOUT_EVERY:-10}
VOCAB_SIZE=${VOCAB_SIZE:-8192}
THREADS=${THREADS:-1}
SEED=${SEED:-42}
PY=${PY:-/usr/bin/python3}
case "$MODEL" in
  tiny | mini) MODEL_CONFIG=configs/bert_$MODEL.json ;;
  *) echo "learning_curve.sh: MODEL must be tiny or mini (got '$MODEL')" >&2; exit 2 ;;
esac
[ -f "$CORPUS" ] || { echo "learning_curve.sh: corpus $CORPUS not found; set CORPUS=path/to/wikitext-2-valid.txt" >&2; exit 2; }
"$PY" -c 'import h5py' 2>/dev/null || { echo "learning_curve.sh: $PY cannot import h5py; set PY to a python3 with h5py" >&2; exit 2; }
export OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=PASSIVE
start=$(date +%s)
rm -rf "$OUT/text" "$OUT/vocab" "$OUT/data" "$OUT/run" "$OUT/curve.md"  # a fresh run; nothing else in OUT is touched
mkdir -p "$OUT/text"

echo "== 1/5 split $CORPUS into articles: every ${HOLDOUT_EVERY}th held out"
# wikitext's <unk> (a rare word replaced by the dataset) becomes [UNK], which the tokenizer keeps
# as one token; otherwise it would be the three easy tokens '<' 'unk' '>'.
awk -v every="$HOLDOUT_EVERY" -v train="$OUT/text/train.txt" -v held="$OUT/text/heldout.txt" '
  /^ = [^=].* = *$/ { n++ }
  { gsub(/<unk>/, "[UNK]"); if (n % every == every - 1) print > held; else print > train }
  END { printf "articles: %d, held out: %d\n", n, int((n + 1) / every) }' "$CORPUS"
# the vocab trainer reads plain text: no headings, wikitext number escapes undone (as prepare does)
grep -v '^ = .* = *$' "$OUT/text/train.txt" | sed 's/ @\([-,.]\)@ /\1/g' > "$OUT/text/train_plain.txt"

echo "== 2/5 WordPiece vocabulary ($VOCAB_SIZE) from the training articles only"
"$BIN" --threads "$THREADS" vocab --input "$OUT/text/train_plain.txt" --output-dir "$OUT/vocab" --vocab-size "$VOCAB_SIZE"
V=$(wc -l < "$OUT/vocab/vocab.txt")

echo "== 3/5 prepare seq-128 shards (paragraphs: headings end documents, sentences split by rule)"
common=(--vocab "$OUT/vocab/vocab.txt" --input-format paragraphs --max-seq-length 128 --max-predictions-per-seq 20)
"$BIN" --threads "$THREADS" prepare --input "$OUT/text/train.txt" "${common[@]}" --output-dir "$OUT/data/train" \
  --dupe-factor 10 --num-shards 1 --random-seed 1
"$BIN" --threads "$THREADS" prepare --input "$OUT/text/heldout.txt" "${common[@]}" --output-dir "$OUT/data/heldout" \
  --dupe-factor 3 --num-shards 1 --random-seed 2
# The eval loader drops a last partial batch: an eval batch that divides the held-out count makes
# every evaluation (and the baselines below) cover all held-out sequences.
EVAL_BATCH=$("$PY" -c '
import glob, sys, h5py
n = sum(h5py.File(p, "r")["input_ids"].shape[0] for p in glob.glob(sys.argv[1] + "/*.hdf5"))
print(max(d for d in range(1, 65) if n % d == 0))' "$OUT/data/heldout")

echo "== 4/5 pretrain BERT-$MODEL: $STEPS steps of $BATCH sequences, LAMB lr $LR, $THREADS thread(s)"
EVAL_EVERY=$((STEPS * BATCH / EVAL_POINTS))
"$BIN" --threads "$THREADS" pretrain --config configs/pretrain_tiny_128_lamb.json --model-config "$MODEL_CONFIG" \
  --set model.vocab_size="$V" --data-dir "$OUT/data/train" --eval-dir "$OUT/data/heldout" \
  --output-dir "$OUT/run" --seed "$SEED" --max-steps "$STEPS" --precision fp32 \
  --set train.global_batch_size="$BATCH" --set train.micro_batch_size="$BATCH" \
  --set optimizer.learning_rate="$LR" --set eval.at_start=true --eval-every-samples "$EVAL_EVERY" \
  --set eval.batch_size="$EVAL_BATCH" --set logging.log_every=10 --set checkpoint.every_steps=0
[ -f "$OUT/run/metrics.jsonl" ] || { echo "learning_curve.sh: training wrote no metrics" >&2; exit 1; }

echo "== 5/5 curve and baselines"
"$PY" - "$OUT" "$(($(date +%s) - start))" <<'EOF' | tee "$OUT/curve.md"
import glob, json, sys
import h5py, numpy as np

out, wall = sys.argv[1], int(sys.argv[2])
vocab = open(f"{out}/vocab/vocab.txt", encoding="utf-8").read().split("\n")

def labels(directory):
    """Every masked-LM label id (positions end at the first 0, as the loader reads them)."""
    ids = []
    for path in sorted(glob.glob(f"{directory}/*.hdf5")):
        with h5py.File(path, "r") as f:
            pos, lab = f["masked_lm_positions"][()], f["masked_lm_ids"][()]
        for p, l in zip(pos, lab):
            n = int(np.argmax(p == 0)) if (p == 0).any() else len(p)
            ids.append(l[:n])
    return np.concatenate(ids).astype(np.int64)

train, held = labels(f"{out}/data/train"), labels(f"{out}/data/heldout")
top = int(np.bincount(train).argmax())
unigram = float((held == top).mean())

rows = [json.loads(l) for l in open(f"{out}/run/metrics.jsonl")]
steps = [r for r in rows if "loss" in r]
evals = [r for r in rows if "eval_mlm_accuracy" in r]
print(f"| step | samples | train loss (mean since previous eval) | held-out MLM loss | held-out MLM acc | held-out NSP acc |")
print(f"|---:|---:|---:|---:|---:|---:|")
prev = -1
for e in evals:
    window = [r["loss"] for r in steps if prev < r["step"] <= e["step"]]
    tl = f"{sum(window) / len(window):.3f}" if window else "-"
    print(f"| {e['step']} | {e['samples']} | {tl} | {e['eval_mlm_loss']:.3f} | {e['eval_mlm_accuracy']:.4f} | {e['eval_nsp_accuracy']:.4f} |")
    prev = e["step"]
final = evals[-1]
print()
print(f"held-out: {final['eval_sequences']} sequences, {final['eval_masked_tokens']} masked tokens evaluated "
      f"({len(held)} in the shards)")
print(f"baseline untrained model (step 0): MLM acc {evals[0]['eval_mlm_accuracy']:.4f}")
print(f"baseline unigram (always '{vocab[top]}', the most frequent training label, "
      f"{(train == top).mean():.4f} of {len(train)} training labels): MLM acc {unigram:.4f}")
print(f"final: MLM acc {final['eval_mlm_accuracy']:.4f} = {final['eval_mlm_accuracy'] / unigram:.1f}x unigram")
print(f"wall time: {wall} s (all five stages)")
EOF
