#!/usr/bin/env bash
# Build the libFuzzer targets in tests/fuzz (clang, -fsanitize=fuzzer,address) and run each for a
# while on a seed corpus made from the tiny checkpoints; prints one summary line per target.
#   FUZZ_SECONDS    seconds per target (default 60)
#   FUZZ_BUILD_DIR  build directory (default build-fuzz)
#   FUZZ_TARGETS    space-separated subset (default: all that exist)
#   JOBS            parallel compile jobs (default 1)
# Corpora grow in $FUZZ_BUILD_DIR/corpus/<target>; crashing inputs land in
# $FUZZ_BUILD_DIR/artifacts/. Exit status 1 when any target found a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-60}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-1}
SHARED=${BERT_SHARED_DATA:-../shared/data}
command -v clang++ >/dev/null || { echo "clang++ not found: apt-get install -y clang libclang-rt-14-dev" >&2; exit 2; }

TARGETS=${FUZZ_TARGETS:-"fuzz_tensorbundle fuzz_torch_pt"}
if [[ -z "${FUZZ_TARGETS:-}" && -f src/io/safetensors.cpp ]]; then TARGETS="$TARGETS fuzz_safetensors"; fi

export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DBERT_BUILD_FUZZERS=ON -DBERT_USE_PCH=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "$JOBS" --target $TARGETS

# ---- seeds -------------------------------------------------------------------------------------
SEEDS="$BUILD/seeds"
rm -rf "$SEEDS"
mkdir -p "$SEEDS"/{fuzz_tensorbundle,fuzz_torch_pt,fuzz_safetensors} "$BUILD/artifacts"
python3 - "$SHARED/tf_checkpoint" "$SEEDS" <<'PY'
import json, os, struct, sys
ckpt, seeds = sys.argv[1], sys.argv[2]
index = os.path.join(ckpt, "bert_model.ckpt.index")
data = os.path.join(ckpt, "bert_model.ckpt.data-00000-of-00001")
if os.path.exists(index) and os.path.exists(data):
    i, d = open(index, "rb").read(), open(data, "rb").read()
    # the genuine tiny checkpoint, and its index alone
    open(os.path.join(seeds, "fuzz_tensorbundle", "tiny_ckpt"), "wb").write(struct.pack("<I", len(i)) + i + d)
    open(os.path.join(seeds, "fuzz_tensorbundle", "tiny_index"), "wb").write(struct.pack("<I", len(i)) + i)
else:
    open(os.path.join(seeds, "fuzz_tensorbundle", "empty"), "wb").write(b"\0\0\0\0")
# a small safetensors file with the tiny model's embedding shapes
tensors = [("bert.embeddings.word_embeddings.weight", [15, 4]), ("bert.embeddings.LayerNorm.bias", [4])]
header, off = {}, 0
for name, shape in tensors:
    n = 4 * shape[0] * (shape[1] if len(shape) > 1 else 1)
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + n]}
    off += n
header["__metadata__"] = {"format": "pt"}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
open(os.path.join(seeds, "fuzz_safetensors", "tiny.safetensors"), "wb").write(
    struct.pack("<Q", len(h)) + h + bytes(k % 256 for k in range(off)))
PY
cp tests/data/nvidia_tiny.pt tests/data/nvidia_tiny_legacy.pt "$SEEDS/fuzz_torch_pt/"

# ---- run ---------------------------------------------------------------------------------------
status=0
for t in $TARGETS; do
  mkdir -p "$BUILD/corpus/$t"
  log="$BUILD/$t.log"
  echo "== $t: ${SECS}s (log: $log)"
  if ! "$BUILD/tests/$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$BUILD/artifacts/$t-" "$BUILD/corpus/$t" "$SEEDS/$t" >"$log" 2>&1; then
    echo "   FOUND A CRASH: see $log and $BUILD/artifacts/" >&2
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  corpus=$(find "$BUILD/corpus/$t" -type f | wc -l)
  echo "   runs=${runs:-?} coverage_edges=${cov:-?} corpus_files=$corpus crashes=$(find "$BUILD/artifacts" -name "$t-*" | wc -l)"
done
exit $status
