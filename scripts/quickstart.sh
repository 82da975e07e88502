#!/usr/bin/env bash
# The main job on the bundled demo data: set up, build, then run the pipeline.
#   OUT  where everything goes (default: runs/quickstart)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BIN=${BIN:-build/bert-train}
OUT=${OUT:-runs/quickstart}
mkdir -p "$OUT"

echo "== 1/1 what this machine can run"
"$BIN" info | tee "$OUT/info.txt"

echo
echo "quickstart: done; outputs in $OUT"
