#!/usr/bin/env bash
# Phase 1 pretraining (seq 128), in the style of NVIDIA's run_pretraining.sh. Environment:
#   DATASET_DIR     HDF5 shards at seq 128 (default: data/phase1)
#   EVAL_DIR        optional held-out shards
#   OUTPUT_DIR      logs, metrics and checkpoints (default: runs/phase1); resumes if it holds a checkpoint
#   CHECKPOINT_DIR  optional: weights to start from (--init-checkpoint), any format `convert` reads
#   PRECISION       fp32 | bf16 | fp16 (default: bf16)
#   BATCH_SIZE      micro-batch per worker (default: the config's)
#   MODEL           tiny | base | large (default: tiny)
#   EXTRA_ARGS      more bert-train flags
set -euo pipefail
cd "$(dirname "$0")/.."
DATASET_DIR=${DATASET_DIR:-data/phase1}
OUTPUT_DIR=${OUTPUT_DIR:-runs/phase1}
# shellcheck source=lib/pretrain_args.sh
source scripts/lib/pretrain_args.sh
run_pretrain_phase 1
