#!/usr/bin/env bash
# Tokenizer throughput, ours vs HF's Rust tokenizer (npm `tokenizers`, BertWordPieceTokenizer set-up),
# on the same text in the same run: tokens/s on 1 and on 2 threads, median of RUNS passes, the
# passes of both tokenizers interleaved so that machine load hits both alike. Only the encoding is
# timed (text already in memory, no output). Prints a markdown table.
#   scripts/bench_tokenizer.sh            env: BIN, DATA, VOCAB, RUNS (default 5), MB (default 3)
# Text: corpus/* + SQuAD + GLUE texts from DATA, cut to the first MB megabytes.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bert-train}
DATA=${DATA:-../shared/data}
VOCAB=${VOCAB:-$DATA/vocab/bert-base-uncased-vocab.txt}
RUNS=${RUNS:-5}
MB=${MB:-3}
NPM_DIR=.cache/npm
if [ ! -d "$NPM_DIR/node_modules/tokenizers" ]; then
  mkdir -p "$NPM_DIR" && (cd "$NPM_DIR" && npm init -y >/dev/null && npm install --no-audit --no-fund tokenizers@0.23.2 >&2)
fi
[ -x "$BIN" ] || { echo "error: $BIN not found; build first (scripts/build.sh)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
node scripts/tools/extract_texts.js "$DATA" "$WORK/texts"
cat "$WORK"/texts/* > "$WORK/all.txt"
head -c $((MB * 1000000)) "$WORK/all.txt" > "$WORK/text.txt"
# drop the possibly cut last line
sed -i '$d' "$WORK/text.txt"
lines=$(wc -l < "$WORK/text.txt")

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
# one pass each, interleaved; files collect "<tokens> <seconds>"
for r in $(seq "$RUNS"); do
  for t in 1 2; do
    "$BIN" tokenize --log-level warn --threads $t --vocab "$VOCAB" --input "$WORK/text.txt" --bench 1 >> "$WORK/ours$t"
    RAYON_NUM_THREADS=$t node scripts/tools/hf_tokenize.js --vocab "$VOCAB" --input "$WORK/text.txt" --bench 1 \
      --bench-mode batch >> "$WORK/hf$t"
  done
  node scripts/tools/hf_tokenize.js --vocab "$VOCAB" --input "$WORK/text.txt" --bench 1 --bench-mode single >> "$WORK/hfs1"
done
rate() { awk '{printf "%.0f\n", $1 / $2}' "$1" | median; }
tokens=$(head -n1 "$WORK/ours1" | cut -d' ' -f1)
hf_tokens=$(head -n1 "$WORK/hf1" | cut -d' ' -f1)
[ "$tokens" = "$hf_tokens" ] || echo "warning: token counts differ (ours $tokens, HF $hf_tokens)" >&2
o1=$(rate "$WORK/ours1"); o2=$(rate "$WORK/ours2"); h1=$(rate "$WORK/hf1"); h2=$(rate "$WORK/hf2"); hs=$(rate "$WORK/hfs1")
hbest1=$(( h1 > hs ? h1 : hs ))
echo "text: $lines lines, $MB MB, $tokens tokens; vocab $(basename "$VOCAB"); $RUNS runs each; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| tokenizer | threads | tokens/s (median) | vs HF |"
echo "|---|---|---|---|"
awk -v o1="$o1" -v o2="$o2" -v h1="$h1" -v h2="$h2" -v hs="$hs" -v hb="$hbest1" 'BEGIN {
  printf "| bert-train tokenize | 1 | %.2f M | %.1fx |\n", o1 / 1e6, o1 / hb
  printf "| HF tokenizers (npm), encodeBatch | 1 | %.2f M | |\n", h1 / 1e6
  printf "| HF tokenizers (npm), encode per line | 1 | %.2f M | |\n", hs / 1e6
  printf "| bert-train tokenize | 2 | %.2f M | %.1fx |\n", o2 / 1e6, o2 / h2
  printf "| HF tokenizers (npm), encodeBatch | 2 | %.2f M | |\n", h2 / 1e6
}'
