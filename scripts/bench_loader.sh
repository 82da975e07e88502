#!/usr/bin/env bash
# Loader throughput: `bert-train bench --loader` against a PyTorch DataLoader over the same HDF5
# shards in the style of NVIDIA's (pre-LDDL) BERT recipe: the shard's datasets read into memory
# with h5py, one sample per __getitem__ (masked_lm_labels built from masked_lm_positions/ids, the
# first 0 position ending the list), RandomSampler, worker processes, pin_memory off (CPU).
# Interleaved run by run so both see the same machine load; prints the median sequences/s of RUNS
# runs for each worker count.
#
#   DATA_DIR=dir of shards (required)  BATCH=64  BATCHES=300  WARMUP=5  RUNS=3  WORKERS="0 1 2"
#   BIN=build/bert-train  PYTHON=/usr/bin/python3 (Debian's python3-torch and h5py)
#   VOCAB=vocab.txt when the shards were written with --no-masking (bert-train masks on the fly;
#         the reference has no dynamic masking, so compare statically masked shards)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bert-train}
PYTHON=${PYTHON:-/usr/bin/python3}
BATCH=${BATCH:-64}
BATCHES=${BATCHES:-300}
WARMUP=${WARMUP:-5}
RUNS=${RUNS:-3}
WORKERS=${WORKERS:-"0 1 2"}
[ -n "${DATA_DIR:-}" ] || { echo "error: set DATA_DIR to a directory of HDF5 shards" >&2; exit 2; }
[ -x "$BIN" ] || { echo "error: $BIN not found; build first (scripts/build.sh)" >&2; exit 2; }
"$PYTHON" -c "import torch, h5py" 2>/dev/null || { echo "error: $PYTHON lacks torch or h5py" >&2; exit 2; }
SEQ=$("$PYTHON" -c 'import glob,sys,h5py; print(h5py.File(sorted(glob.glob(sys.argv[1]+"/*.hdf5"))[0],"r")["input_ids"].shape[1])' "$DATA_DIR")

REF=$(mktemp /tmp/bert_loader_ref_XXXXXX.py)
trap 'rm -f "$REF"' EXIT
cat > "$REF" <<'PY'
import glob, sys, time
import h5py, numpy as np, torch
from torch.utils.data import DataLoader, Dataset, RandomSampler

directory, batch, batches, warmup, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(1)
KEYS = ["input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids", "next_sentence_labels"]

class Shard(Dataset):
    def __init__(self, path):
        with h5py.File(path, "r") as f:
            self.data = [np.asarray(f[k][:]) for k in KEYS]
    def __len__(self):
        return len(self.data[0])
    def __getitem__(self, i):
        ids, mask, seg, pos, mids, nsp = [torch.from_numpy(np.asarray(d[i]).astype(np.int64)) for d in self.data]
        labels = torch.full_like(ids, -1)
        zeros = (pos == 0).nonzero()
        n = int(zeros[0]) if len(zeros) else len(pos)
        labels[pos[:n]] = mids[:n]
        return ids, seg, mask, labels, nsp

files = sorted(glob.glob(directory + "/*.hdf5"))
def loaders():
    while True:  # shard after shard, as the recipe walks its file list
        for p in files:
            ds = Shard(p)
            yield from DataLoader(ds, sampler=RandomSampler(ds), batch_size=batch, num_workers=workers, drop_last=True)
it = loaders()
for _ in range(warmup):
    next(it)
t0, seqs = time.perf_counter(), 0
for _ in range(batches):
    seqs += next(it)[0].shape[0]
print(seqs / (time.perf_counter() - t0))
PY

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "loader throughput on $DATA_DIR (seq $SEQ, batch $BATCH, $BATCHES timed batches, median of $RUNS runs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| workers | bert-train seq/s | PyTorch DataLoader seq/s | ratio |\n|---:|---:|---:|---:|\n'
for w in $WORKERS; do
  ours="" ref=""
  for _ in $(seq "$RUNS"); do
    o=$("$BIN" --log-level warn --threads 1 bench --loader --data-dir "$DATA_DIR" --max-seq-length "$SEQ" \
        --micro-batch-size "$BATCH" --num-workers "$w" --warmup-steps "$WARMUP" --steps "$BATCHES" --json \
        ${VOCAB:+--vocab "$VOCAB"} | sed 's/.*"seq_per_s":\([0-9.e+-]*\).*/\1/')
    r=$(OMP_NUM_THREADS=1 "$PYTHON" "$REF" "$DATA_DIR" "$BATCH" "$BATCHES" "$WARMUP" "$w")
    ours="$ours $o" ref="$ref $r"
  done
  mo=$(echo "$ours" | median) mr=$(echo "$ref" | median)
  printf '| %s | %.0f | %.0f | %.1fx |\n' "$w" "$mo" "$mr" "$(echo "$mo $mr" | awk '{print $1/$2}')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
