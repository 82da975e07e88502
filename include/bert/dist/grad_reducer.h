#pragma once
// Gradient averaging across ranks, once per optimizer step after gradient accumulation
// (NVIDIA's allreduce_post_accumulation): gradients are copied into contiguous buckets of
// about `bucket_bytes` (one bucket per dtype/device run; a tensor larger than a bucket gets its
// own; the buffers are kept between steps), each bucket is summed across ranks, divided by the
// world size and copied back. With a bf16/fp16 comm dtype (allreduce_post_accumulation_fp16)
// each gradient is pre-divided in its own precision while cast into the bucket, summed in the
// low precision, and cast back — half the bytes on the wire.
//
// Parameters without a gradient get a zero gradient so that every rank sends the same buckets.
// After reduce(), every rank holds identical gradients, so a global gradient norm (LAMB, clipping)
// taken afterwards is identical everywhere.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "bert/dist/communicator.h"

namespace bert::dist {

class GradientReducer {
 public:
  // `params` are the trainable parameters in a fixed order (the same on every rank).
  // comm_dtype: "fp32", "bf16" or "fp16". bucket_bytes counts communicated bytes.
  GradientReducer(Communicator& comm, std::vector<torch::Tensor> params, int64_t bucket_bytes,
                  const std::string& comm_dtype = "fp32");
  // From the dist config (bucket_mb, comm_dtype).
  GradientReducer(Communicator& comm, std::vector<torch::Tensor> params);

  // Average every parameter's .grad() across ranks (no-op for world size 1).
  void reduce();

  size_t num_buckets() const { return buckets_.size(); }
  // Index ranges into params for each bucket (for tests and the log).
  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }

 private:
  void plan();

  Communicator& comm_;
  std::vector<torch::Tensor> params_;
  int64_t bucket_bytes_;
  torch::ScalarType comm_type_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<torch::Tensor> flats_;  // one contiguous buffer per bucket, reused every step
};

}  // namespace bert::dist
