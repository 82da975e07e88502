#!/usr/bin/env bash
# Multi-node pretraining torchrun-style, with `bert-train launch` on every node (no MPI needed).
# Run this script once per node with the same NNODES/MASTER_ADDR/MASTER_PORT and that node's
# NODE_RANK; the master is the node with NODE_RANK=0.
#
#   NNODES           nodes in the job (default: 1)
#   NODE_RANK        this node's index, 0 .. NNODES-1 (default: 0)
#   NPROC_PER_NODE   workers per node (CPU: one per socket; GPU: one per GPU) (default: 2)
#   MASTER_ADDR      host of node 0, reachable from every node (default: 127.0.0.1)
#   MASTER_PORT      rendezvous port (default: 29500)
#   DATASET_DIR      HDF5 shards;  OUTPUT_DIR  (default: runs/pretrain_torchrun)
#   CONFIG           run config (default: configs/pretrain_base_128_phase1.json)
#   BIN              bert-train binary (default: build/bert-train)
#   WORKER_ARGS      replace the default "pretrain ..." worker arguments
#   DRY_RUN=1        print the command instead of running it
# Arguments given to this script are appended to the worker's arguments, e.g.
#   NNODES=2 NODE_RANK=0 MASTER_ADDR=node01 DATASET_DIR=/data/phase1 bash scripts/run_pretrain_torchrun.sh
set -euo pipefail
cd "$(dirname "$0")/.."

NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
NPROC_PER_NODE=${NPROC_PER_NODE:-2}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
MASTER_PORT=${MASTER_PORT:-29500}
OUTPUT_DIR=${OUTPUT_DIR:-runs/pretrain_torchrun}
CONFIG=${CONFIG:-configs/pretrain_base_128_phase1.json}
BIN=${BIN:-$PWD/build/bert-train}

if [ -n "${WORKER_ARGS:-}" ]; then
  read -r -a ARGS <<<"$WORKER_ARGS"
else
  : "${DATASET_DIR:?set DATASET_DIR to the directory of HDF5 shards}"
  ARGS=(pretrain --config "$CONFIG" --data-dir "$DATASET_DIR" --output-dir "$OUTPUT_DIR")
fi

CMD=("$BIN" launch --nnodes "$NNODES" --node-rank "$NODE_RANK" --nproc-per-node "$NPROC_PER_NODE"
     --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" -- "${ARGS[@]}" "$@")
if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%q ' "${CMD[@]}"; echo
  exit 0
fi
exec "${CMD[@]}"
