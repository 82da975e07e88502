#!/usr/bin/env bash
# Packed vs unpacked pretraining throughput in real (unpadded) tokens/s, on the CPU.
# Prepares wikitext-2 (valid split) at each SEQ with `prepare --pack` (shards and packed shards),
# then runs `pretrain` on both for each precision, interleaved run by run so both see the same
# machine load, and prints one row per (seq, precision): the median real tokens/s of RUNS runs
# (each run's figure is the median over its logged steps after WARMUP), the packed/unpacked
# ratio, and the packing factor from the packed manifest.
#
#   SEQS="128 512"  PRECISIONS="fp32 bf16"  RUNS=3  MODEL=configs/bert_tiny.json  STEPS=12  WARMUP=2
#   BATCH_128=32  BATCH_512=8  THREADS=0 (all cores)  CORPUS=../shared/data/corpus/wikitext-2-valid.txt
#   VOCAB=../shared/data/vocab/bert-base-uncased-vocab.txt  WORK=/tmp/bench_packing  BIN=build/bert-train
#
# Both runs use the same micro-batch of rows, so a step costs the same; a packed row carries
# sequences_per_row sequences, so real tokens/s measures what packing buys.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bert-train}
SEQS=${SEQS:-"128 512"}
PRECISIONS=${PRECISIONS:-"fp32 bf16"}
RUNS=${RUNS:-3}
MODEL=${MODEL:-configs/bert_tiny.json}
STEPS=${STEPS:-12}
WARMUP=${WARMUP:-2}
THREADS=${THREADS:-0}
CORPUS=${CORPUS:-../shared/data/corpus/wikitext-2-valid.txt}
VOCAB=${VOCAB:-../shared/data/vocab/bert-base-uncased-vocab.txt}
WORK=${WORK:-/tmp/bench_packing}
[ -x "$BIN" ] || { echo "error: $BIN not found; build first (scripts/build.sh)" >&2; exit 2; }
[ -f "$CORPUS" ] || { echo "error: corpus $CORPUS not found (set CORPUS=...)" >&2; exit 2; }
[ -f "$VOCAB" ] || { echo "error: vocab $VOCAB not found (set VOCAB=...)" >&2; exit 2; }
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
mkdir -p "$WORK"

median_tok_s() {  # metrics.jsonl -> median tokens_per_s of the steps after WARMUP
  python3 - "$1" "$WARMUP" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "tokens_per_s" in r][int(sys.argv[2]):]
print(statistics.median(r["tokens_per_s"] for r in rows))
PY
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg), model $MODEL, $RUNS runs"
printf "| seq | precision | micro-batch (rows) | unpacked tok/s | packed tok/s | packed / unpacked | sequences/row | padding before -> after |\n"
printf "|---|---|---|---|---|---|---|---|\n"
for SEQ in $SEQS; do
  DATA="$WORK/wt2_$SEQ"
  P=$(( SEQ * 15 / 100 + 1 ))
  if [ ! -f "$DATA/packed/manifest.json" ]; then
    "$BIN" prepare --input "$CORPUS" --vocab "$VOCAB" --output-dir "$DATA" --input-format paragraphs \
      --max-seq-length "$SEQ" --max-predictions-per-seq "$P" --dupe-factor 1 --pack >"$WORK/prepare_$SEQ.log" 2>&1
  fi
  read -r SPR PB PA < <(python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['packing']; print(m['sequences_per_row'], m['padding_fraction_before'], m['padding_fraction_after'])" "$DATA/packed/manifest.json")
  BATCH_VAR="BATCH_$SEQ"
  BATCH=${!BATCH_VAR:-$([ "$SEQ" -ge 512 ] && echo 8 || echo 32)}
  for PREC in $PRECISIONS; do
    U=(); K=()
    for r in $(seq 1 "$RUNS"); do
      for kind in unpacked packed; do
        dir="$DATA"; [ $kind = packed ] && dir="$DATA/packed"
        out="$WORK/run_${SEQ}_${PREC}_${kind}_$r"
        rm -rf "$out"
        "$BIN" pretrain --model-config "$MODEL" --data-dir "$dir" --max-seq-length "$SEQ" --precision "$PREC" \
          --set train.micro_batch_size="$BATCH" --set train.global_batch_size="$BATCH" --max-steps "$STEPS" --threads "$THREADS" \
          --set logging.log_every=1 --set checkpoint.save_final=false --set model.vocab_size=30522 \
          --output-dir "$out" >"$out.log" 2>&1 || { echo "error: run failed, see $out.log" >&2; exit 1; }
        v=$(median_tok_s "$out/metrics.jsonl")
        if [ $kind = packed ]; then K+=("$v"); else U+=("$v"); fi
      done
    done
    python3 - "$SEQ" "$PREC" "$BATCH" "$SPR" "$PB" "$PA" "${U[*]}" "${K[*]}" <<'PY'
import statistics, sys
seq, prec, batch, spr, pb, pa = sys.argv[1:7]
u = statistics.median(map(float, sys.argv[7].split())); k = statistics.median(map(float, sys.argv[8].split()))
print(f"| {seq} | {prec} | {batch} | {u:,.0f} | {k:,.0f} | {k/u:.2f}x | {float(spr):.2f} | {100*float(pb):.1f}% -> {100*float(pa):.1f}% |")
PY
  done
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
