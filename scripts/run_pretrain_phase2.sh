#!/usr/bin/env bash
# Phase 2 pretraining (seq 512) from the phase-1 weights (new optimizer and schedule, as NVIDIA's
# phase 2 does). Environment:
#   DATASET_DIR     HDF5 shards at seq 512 (default: data/phase2)
#   EVAL_DIR        optional held-out shards
#   OUTPUT_DIR      (default: runs/phase2); resumes phase 2 itself if it holds a checkpoint
#   CHECKPOINT_DIR  the phase-1 checkpoint (default: runs/phase1/checkpoints/latest)
#   PRECISION       fp32 | bf16 | fp16 (default: bf16)
#   BATCH_SIZE      micro-batch per worker (default: the config's)
#   MODEL           tiny | base | large (default: tiny)
#   EXTRA_ARGS      more bert-train flags
set -euo pipefail
cd "$(dirname "$0")/.."
DATASET_DIR=${DATASET_DIR:-data/phase2}
OUTPUT_DIR=${OUTPUT_DIR:-runs/phase2}
CHECKPOINT_DIR=${CHECKPOINT_DIR:-runs/phase1/checkpoints/latest}
# shellcheck source=lib/pretrain_args.sh
source scripts/lib/pretrain_args.sh
run_pretrain_phase 2
