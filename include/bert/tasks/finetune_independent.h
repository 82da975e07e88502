#pragma once
// Fine-tuning under a launcher (torchrun variables, mpirun, srun) with independent workers,
// seed 000's `mpi_workers_sync_gradients=False`: with --set dist.independent_workers=true every
// rank fine-tunes its own replica on the whole training set with seed train.seed + rank into
// <output>/rank_<r>/ (its own evaluations, best/ and finetune_summary.json); no gradients are
// exchanged. When all are done the ranks' best dev metrics are gathered to rank 0, which writes
// <output>/independent_workers.json (every rank's best metric, seed and directory, and the winner)
// and points <output>/best at the winner's best/ model (a relative symlink).
//
// A single process runs the plain fine-tuning. Several processes without independent_workers are
// refused (fine-tuning across processes means independent replicas here; gradients are never
// synchronised): a clear UserError says what to set.
#include "bert/config/run_config.h"
#include "bert/tasks/finetune.h"

namespace bert::tasks {

// Plain run_finetune for one process; the independent-workers protocol above under a launcher.
// Returns rank 0's view (the winner's summary) on rank 0, the rank's own result elsewhere.
FinetuneResult run_finetune_workers(RunConfig cfg);

}  // namespace bert::tasks
