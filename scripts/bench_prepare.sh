#!/usr/bin/env bash
# Benchmark `bert-train prepare` against NVIDIA's Python create_pretraining_data.py on the same
# corpus, vocab and settings (Google's sentence-per-line format, gzip HDF5 output for both;
# ours also without --compress). Checks with h5py that our compressed and uncompressed shards
# decode to the same arrays, and prints the load average before and after (the machine is shared).
# NVIDIA's script is read from a local mirror of NVIDIA/DeepLearningExamples into a temporary
# directory and run with Debian's python3 (python3-h5py, python3-numpy, python3-tqdm, python3-six,
# python3-boto3, python3-requests); it is never copied into this repository.
#
#   NVIDIA_REPO  git directory of DeepLearningExamples (default: /work/.mirror/NVIDIA+DeepLearningExamples/repo)
#   CORPUS       wikitext-style text (default: ../shared/data/corpus/wikitext-2-valid.txt), turned into
#                sentence-per-line form by splitting at " . " and making each " = Title = " a document break
#   REPEAT       the corpus is repeated this many times (default 4) so start-up costs do not dominate
#   VOCAB        default ../shared/data/vocab/bert-base-uncased-vocab.txt
#   RUNS         runs per tool (default 3); medians are reported
#   BIN          bert-train binary (default build/bert-train)
set -euo pipefail
cd "$(dirname "$0")/.."
NVIDIA_REPO=${NVIDIA_REPO:-/work/.mirror/NVIDIA+DeepLearningExamples/repo}
CORPUS=${CORPUS:-../shared/data/corpus/wikitext-2-valid.txt}
VOCAB=${VOCAB:-../shared/data/vocab/bert-base-uncased-vocab.txt}
RUNS=${RUNS:-3}
REPEAT=${REPEAT:-4}
BIN=${BIN:-build/bert-train}
PY=${PY:-/usr/bin/python3}
SETTINGS_PY="--max_seq_length 128 --max_predictions_per_seq 20 --masked_lm_prob 0.15 --dupe_factor 5 --short_seq_prob 0.1 --random_seed 12345 --do_lower_case"
SETTINGS_OURS="--max-seq-length 128 --max-predictions-per-seq 20 --masked-lm-prob 0.15 --dupe-factor 5 --short-seq-prob 0.1 --random-seed 12345 --do-lower-case --num-shards 4"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ref="$work/nvidia"
mkdir -p "$ref"
for f in create_pretraining_data.py tokenization.py file_utils.py; do
  git --git-dir="$NVIDIA_REPO" show "HEAD:PyTorch/LanguageModeling/BERT/$f" >"$ref/$f" 2>/dev/null ||
    git -C "$NVIDIA_REPO" show "HEAD:PyTorch/LanguageModeling/BERT/$f" >"$ref/$f"
done

# The same input for both: one sentence per line, a blank line between articles.
corpus="$work/corpus.txt"
one="$work/one.txt"
sed -E -e 's/^ = [^=].* = $//' -e '/^ = = /d' -e '/^ +$/d' -e 's/ +$//' -e 's/ \. / .\n/g' "$CORPUS" |
  sed -E -e 's/^ +//' >"$one"
for ((i = 0; i < REPEAT; i++)); do cat "$one"; done >"$corpus"
mb=$(awk -v b="$(stat -c %s "$corpus")" 'BEGIN{printf "%.3f", b/1e6}')
echo "corpus: ${mb} MB ($(wc -l <"$corpus") lines): $CORPUS x $REPEAT, one sentence per line"
echo "machine: $(getconf _NPROCESSORS_ONLN) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

median() { sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
count_py() { "$PY" -c "import h5py,sys; print(h5py.File(sys.argv[1],'r')['input_ids'].shape[0])" "$1"; }

echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A T C N M
run_tool() {  # name, command...  (wall and CPU = user + sys seconds, from /usr/bin/time)
  local name=$1; shift
  local times=() cpus=() rss=()
  for ((r = 0; r < RUNS; r++)); do
    rm -rf "$work/out_$name"; mkdir -p "$work/out_$name"
    /usr/bin/time -f "%e %U %S %M" -o "$work/time_$name" "$@" >"$work/log_$name" 2>&1 || { cat "$work/log_$name"; exit 1; }
    read -r wall user sys kb <"$work/time_$name"
    rss+=("$((kb / 1024))")
    times+=("$wall")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.2f", u+s}')")
  done
  T[$name]=$(printf '%s\n' "${times[@]}" | median)
  C[$name]=$(printf '%s\n' "${cpus[@]}" | median)
  M[$name]=$(printf '%s\n' "${rss[@]}" | median)
  echo "$name: wall ${times[*]} s (median ${T[$name]}), CPU ${cpus[*]} s (median ${C[$name]})"
}

run_tool nvidia_python bash -c "cd '$ref' && '$PY' create_pretraining_data.py --vocab_file '$PWD/$VOCAB' --input_file '$corpus' --output_file '$work/out_nvidia_python/out.hdf5' $SETTINGS_PY"
N[nvidia_python]=$(count_py "$work/out_nvidia_python/out.hdf5")
for w in 1 2 1u 2u; do
  # 1u, 2u: uncompressed output (our default; NVIDIA's script always gzips)
  extra="--compress"
  [[ $w == *u ]] && extra=""
  run_tool "bert_train_w$w" "$BIN" prepare --input "$corpus" --vocab "$VOCAB" --output-dir "$work/out_bert_train_w$w" $SETTINGS_OURS $extra --num-workers "${w%u}"
  n=0
  for f in "$work/out_bert_train_w$w"/shard_*.hdf5; do n=$((n + $(count_py "$f"))); done
  N[bert_train_w$w]=$n
done

echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$work/out_bert_train_w1" "$work/out_bert_train_w1u" <<'PYEOF'
import glob, os, sys
import h5py, numpy as np
gz, raw = sys.argv[1], sys.argv[2]
names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(raw, "shard_*.hdf5")))
for n in names:
    a, b = h5py.File(os.path.join(gz, n), "r"), h5py.File(os.path.join(raw, n), "r")
    assert sorted(a) == sorted(b), n
    for k in a:
        assert a[k].compression == "gzip" and a[k].shuffle, (n, k)
        x, y = a[k][()], b[k][()]
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), (n, k)
print(f"h5py: {len(names)} compressed shard(s) decode to exactly the uncompressed arrays")
PYEOF
echo
printf '| tool | wall s | CPU s | peak RSS MB | instances | instances/s (wall) | MB text/s (wall) | speed-up (wall) | speed-up (CPU) |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for name in nvidia_python bert_train_w1 bert_train_w2 bert_train_w1u bert_train_w2u; do
  awk -v n="$name" -v t="${T[$name]}" -v c="${C[$name]}" -v i="${N[$name]}" -v mb="$mb" \
    -v base="${T[nvidia_python]}" -v cbase="${C[nvidia_python]}" -v m="${M[$name]}" \
    'BEGIN{printf "| %s | %.2f | %.2f | %d | %d | %.0f | %.3f | %.1fx | %.1fx |\n", n, t, c, m, i, i/t, mb/t, base/t, cbase/c}'
done
