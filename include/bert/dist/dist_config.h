#pragma once
// The dist section: how ranks find each other and how gradients are averaged.
// Ranks, world size and the master address come from the launcher's environment
// (see bert/dist/launch_env.h), not from here.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"

namespace bert {

struct DistConfig {
  std::string backend = "auto";         // auto: the device's collective backend (gloo on CPU, nccl on CUDA)
  double bucket_mb = 25.0;              // gradient bucket size (MiB of communicated data)
  std::string comm_dtype = "fp32";      // gradients travel as fp32, bf16 or fp16
  bool overlap_backward = true;         // all-reduce buckets while the last backward of a step runs
  double timeout_s = 600;               // a collective that takes longer fails (names the lost rank)
  double rendezvous_timeout_s = 300;    // wait this long for every rank to join
  double heartbeat_s = 1.0;             // liveness beacon period, used to name a lost rank
  bool independent_workers = false;     // finetune: every rank trains its own replica (no gradient sync)

  void describe(config::FieldList& f) {
    f.add("backend", backend, "collective backend (auto: gloo on CPU, nccl on CUDA)")
        .one_of({"auto", "gloo", "nccl", "hccl"});
    f.add("bucket_mb", bucket_mb, "gradient all-reduce bucket size in MiB").range(1e-6, 1e6);
    f.add("comm_dtype", comm_dtype, "dtype gradients are communicated in").one_of({"fp32", "bf16", "fp16"});
    f.add("overlap_backward", overlap_backward,
          "all-reduce each gradient bucket as soon as the last micro-batch's backward fills it");
    f.add("timeout_s", timeout_s, "seconds before a collective fails (a rank died or hangs)").range(1, 1e7);
    f.add("rendezvous_timeout_s", rendezvous_timeout_s, "seconds to wait for every rank to join").range(1, 1e7);
    f.add("heartbeat_s", heartbeat_s, "liveness beacon period in seconds").range(0.05, 3600);
    f.add("independent_workers", independent_workers,
          "finetune: each rank trains its own replica (seed + rank), the best is reported");
  }
};

}  // namespace bert
