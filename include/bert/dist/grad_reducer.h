#pragma once
// Gradient averaging across ranks, once per optimizer step after gradient accumulation
// (NVIDIA's allreduce_post_accumulation): gradients are copied into contiguous buckets of
// about `bucket_bytes` (in reverse parameter order, as DDP does, so the buckets whose gradients
// backward produces first come first; one bucket per dtype/device run; a tensor larger than a
// bucket gets its own; the buffers are kept between steps), each bucket is summed across ranks,
// divided by the world size and copied back. With a bf16/fp16 comm dtype
// (allreduce_post_accumulation_fp16) each gradient is pre-divided in its own precision while cast
// into the bucket, summed in the low precision, and cast back — half the bytes on the wire.
//
// Overlap (dist.overlap_backward): arm_overlap() just before the LAST backward of an
// accumulation cycle arms per-parameter gradient hooks (registered once, idle otherwise; earlier
// micro-batches accumulate locally). Each hook receives a parameter's incoming gradient before autograd accumulates it into
// .grad, writes `.grad (earlier micro-batches, if any) + incoming` into the bucket, and once a
// bucket is complete its all-reduce starts asynchronously while backward goes on. Buckets are
// launched strictly in bucket order (bucket k only after k-1), so every rank issues the same
// collectives in the same order whatever order its hooks fire in. reduce() then launches what
// is left (a parameter that got no gradient counts as its earlier .grad or zero), waits, divides
// and copies back. The values are bit-identical to the post-hoc path for fp32.
//
// Parameters without a gradient get a zero gradient so that every rank sends the same buckets.
// After reduce(), every rank holds identical gradients, so a global gradient norm (LAMB, clipping)
// taken afterwards is identical everywhere.
//
// Timing (Communicator::take_stats): `seconds` is the exposed time (packing in the hooks plus
// everything reduce() does after backward), `total_seconds` the time from the first packed
// gradient to the end of reduce(). Without overlap both are the time reduce() took.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "bert/dist/communicator.h"

namespace bert::dist {

class GradientReducer {
 public:
  // `params` are the trainable parameters in a fixed order (the same on every rank).
  // comm_dtype: "fp32", "bf16" or "fp16". bucket_bytes counts communicated bytes.
  GradientReducer(Communicator& comm, std::vector<torch::Tensor> params, int64_t bucket_bytes,
                  const std::string& comm_dtype = "fp32", bool overlap = false);
  // From the dist config (bucket_mb, comm_dtype, overlap_backward).
  GradientReducer(Communicator& comm, std::vector<torch::Tensor> params);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Call right before the backward of the last micro-batch of a step: that backward then
  // starts the bucket all-reduces as buckets fill. No-op without overlap or with world size 1.
  void arm_overlap();

  // Average every parameter's .grad() across ranks (no-op for world size 1). After an armed
  // backward it completes the overlapped reduction; otherwise it does the whole reduction now.
  void reduce();

  bool overlap() const { return overlap_; }
  // Buckets the armed backward has started so far (0 when not armed; for tests and the log).
  size_t buckets_in_flight() const;
  size_t num_buckets() const { return buckets_.size(); }
  // Index ranges into params for each bucket, in launch order (for tests and the log).
  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }

 private:
  struct Hooks;
  void plan();
  void allocate();
  void pack(size_t i, const torch::Tensor& incoming);  // one gradient into its bucket slot
  void launch_ready();                                 // start complete buckets, in order
  void copy_back();

  Communicator& comm_;
  std::vector<torch::Tensor> params_;
  int64_t bucket_bytes_;
  torch::ScalarType comm_type_;
  bool overlap_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<size_t> bucket_of_, offset_of_;  // per parameter: its bucket and element offset
  std::vector<torch::Tensor> flats_;           // one contiguous buffer per bucket, reused every step
  std::shared_ptr<Hooks> hooks_;               // armed-state shared with the autograd hooks
};

}  // namespace bert::dist
