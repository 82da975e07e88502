#!/usr/bin/env bash
# Token-id parity of `bert-train tokenize` with HF's Rust tokenizer (npm `tokenizers`, set up as
# BertWordPieceTokenizer: same vocab, same lower-casing, no special tokens added) on every line of
# ../shared/data/corpus/*, the SQuAD contexts/questions/answers and the GLUE files, with the uncased
# and the cased BERT vocab. With --sweep, also every Unicode code point >= U+0080 in context; its
# mismatches are checked against the one known reference quirk (HF's Unicode 8.0 character tables,
# see docs/tokenizer.md) and only unexplained ones count. Mode `trained` does the same with an
# uncased vocab that `bert-train vocab` trains on wikitext-2 (TRAINED_VOCAB_SIZE tokens): the
# trainer's output must load in HF's tokenizer and give the same ids there as in ours.
# Prints each mismatching line (up to MAX_SHOWN per file) and a summary; exit 1 on any mismatch.
#   scripts/parity_tokenizer.sh [--sweep]
#   env: BIN (bert-train binary), DATA (shared data dir), MAX_SHOWN (default 5),
#        MODES (default "uncased cased trained"), TRAINED_VOCAB_SIZE (default 8000)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bert-train}
DATA=${DATA:-../shared/data}
MAX_SHOWN=${MAX_SHOWN:-5}
NPM_DIR=.cache/npm
if [ ! -d "$NPM_DIR/node_modules/tokenizers" ]; then
  echo "installing npm tokenizers into $NPM_DIR (git-ignored)" >&2
  mkdir -p "$NPM_DIR" && (cd "$NPM_DIR" && npm init -y >/dev/null && npm install --no-audit --no-fund tokenizers@0.23.2 >&2)
fi
[ -x "$BIN" ] || { echo "error: $BIN not found; build first (scripts/build.sh)" >&2; exit 2; }
[ -d "$DATA" ] || { echo "error: shared data dir $DATA not found; set DATA" >&2; exit 2; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
node scripts/tools/extract_texts.js "$DATA" "$WORK/texts" ${1:+"$1"}

total_bad=0
total_lines=0
sweep_lines=0
sweep_bad=0
for mode in ${MODES:-uncased cased trained}; do
  vocab="$DATA/vocab/bert-base-$mode-vocab.txt"
  flag=""
  [ "$mode" = cased ] && flag="--cased"
  if [ "$mode" = trained ]; then
    vocab="$WORK/trained/vocab.txt"
    "$BIN" vocab --log-level warn --input "$DATA/corpus/wikitext-2-valid.txt" --output-dir "$WORK/trained" \
      --vocab-size "${TRAINED_VOCAB_SIZE:-8000}" --min-frequency 2
  fi
  echo "== $mode ($vocab)"
  for f in "$WORK"/texts/*; do
    name=$(basename "$f")
    "$BIN" tokenize --log-level warn --vocab "$vocab" $flag --ids --input "$f" > "$WORK/ours"
    node scripts/tools/hf_tokenize.js --vocab "$vocab" $flag --input "$f" > "$WORK/hf"
    set +e
    res=$(node scripts/tools/compare_ids.js "$f" "$WORK/ours" "$WORK/hf" "$vocab" "$MAX_SHOWN")
    set -e
    summary=$(tail -n1 <<<"$res")
    bad=${summary% *}
    lines=${summary#* }
    if [ "$name" = sweep-unicode.txt ]; then
      rep=$(node scripts/tools/sweep_report.js "$f" "$WORK/ours" "$WORK/hf")
      unexplained=$(tail -n1 <<<"$rep")
      unexplained=${unexplained% *}
      printf '%-40s %8s lines  %6s mismatches, %s not explained by HF'"'"'s Unicode 8.0 tables\n' "$name" "$lines" "$bad" "$unexplained"
      head -n -1 <<<"$rep"
      sweep_lines=$((sweep_lines + lines))
      sweep_bad=$((sweep_bad + bad))
      total_bad=$((total_bad + unexplained))
      continue
    fi
    printf '%-40s %8s lines  %6s mismatches\n' "$name" "$lines" "$bad"
    [ "$bad" != 0 ] && head -n -1 <<<"$res"
    total_bad=$((total_bad + bad))
    total_lines=$((total_lines + lines))
  done
done
[ "$sweep_lines" != 0 ] && echo "sweep: $sweep_lines lines, $sweep_bad mismatches, all but those counted below explained by HF's Unicode 8.0 tables"
echo "total: $total_lines lines of real text compared, $total_bad mismatches"
[ "$total_bad" = 0 ]
