#!/usr/bin/env bash
# Multi-node pretraining with mpirun and a hostfile (the layout of Intel's recipe).
# bert-train reads OpenMPI's rank variables itself; rank 0 runs on the first host of the
# hostfile and hosts the rendezvous (MASTER_ADDR:MASTER_PORT).
#
#   NNODES            number of nodes to use (default: hosts in HOSTFILE)
#   HOSTFILE          OpenMPI hostfile, one host per line ("node01 slots=2"), first = rank 0's host
#   PROCESS_PER_NODE  ranks per node (CPU: one per socket; GPU: one per GPU) (default: 2)
#   DATASET_DIR       HDF5 shards (bert-train pretrain --data-dir)
#   OUTPUT_DIR        logs, metrics, checkpoints (default: runs/pretrain_multinode)
#   CONFIG            run config (default: configs/pretrain_base_128_phase1.json)
#   MASTER_ADDR       default: first host of HOSTFILE;  MASTER_PORT  default: 29500
#   BIN               bert-train binary (default: build/bert-train, must exist on every node)
#   MPIRUN_ARGS       extra mpirun arguments (e.g. "--mca btl_tcp_if_include eth0")
#   WORKER_ARGS       replace the default "pretrain ..." worker arguments
#   DRY_RUN=1         print the command instead of running it
# Arguments given to this script are appended to the worker's arguments, e.g.
#   HOSTFILE=hosts NNODES=2 PROCESS_PER_NODE=2 DATASET_DIR=/data/phase1 \
#     bash scripts/run_pretrain_multinode.sh --max-steps 100
set -euo pipefail
cd "$(dirname "$0")/.."

HOSTFILE=${HOSTFILE:?set HOSTFILE to an OpenMPI hostfile (one host per line, rank 0 first)}
[ -f "$HOSTFILE" ] || { echo "run_pretrain_multinode: hostfile $HOSTFILE not found" >&2; exit 2; }
mapfile -t HOSTS < <(sed -e 's/#.*//' "$HOSTFILE" | awk 'NF {print $1}')
[ ${#HOSTS[@]} -gt 0 ] || { echo "run_pretrain_multinode: $HOSTFILE lists no hosts" >&2; exit 2; }
NNODES=${NNODES:-${#HOSTS[@]}}
PROCESS_PER_NODE=${PROCESS_PER_NODE:-2}
if [ "$NNODES" -gt "${#HOSTS[@]}" ]; then
  echo "run_pretrain_multinode: NNODES=$NNODES but $HOSTFILE lists ${#HOSTS[@]} host(s)" >&2; exit 2
fi
NP=$((NNODES * PROCESS_PER_NODE))
OUTPUT_DIR=${OUTPUT_DIR:-runs/pretrain_multinode}
CONFIG=${CONFIG:-configs/pretrain_base_128_phase1.json}
BIN=${BIN:-$PWD/build/bert-train}
export MASTER_ADDR=${MASTER_ADDR:-${HOSTS[0]}}
export MASTER_PORT=${MASTER_PORT:-29500}
# CPU: each rank gets the cores of one socket (override OMP_NUM_THREADS to change)
if [ -z "${OMP_NUM_THREADS:-}" ]; then
  export OMP_NUM_THREADS=$(( $(nproc) / PROCESS_PER_NODE > 0 ? $(nproc) / PROCESS_PER_NODE : 1 ))
fi

if [ -n "${WORKER_ARGS:-}" ]; then
  read -r -a ARGS <<<"$WORKER_ARGS"
else
  : "${DATASET_DIR:?set DATASET_DIR to the directory of HDF5 shards}"
  ARGS=(pretrain --config "$CONFIG" --data-dir "$DATASET_DIR" --output-dir "$OUTPUT_DIR")
fi

ROOT=()
[ "$(id -u)" -eq 0 ] && ROOT=(--allow-run-as-root)
# shellcheck disable=SC2206
CMD=(mpirun "${ROOT[@]}" -np "$NP" --hostfile "$HOSTFILE" --map-by "ppr:${PROCESS_PER_NODE}:node"
     --bind-to socket -x MASTER_ADDR -x MASTER_PORT -x OMP_NUM_THREADS -x PATH -x LD_LIBRARY_PATH
     ${MPIRUN_ARGS:-} "$BIN" "${ARGS[@]}" "$@")

echo "run_pretrain_multinode: $NP ranks on $NNODES node(s) x $PROCESS_PER_NODE, master $MASTER_ADDR:$MASTER_PORT," \
     "OMP_NUM_THREADS=$OMP_NUM_THREADS"
if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%q ' "${CMD[@]}"; echo
  exit 0
fi
exec "${CMD[@]}"
