// Bucketed gradient averaging (see bert/dist/grad_reducer.h).
#include "bert/dist/grad_reducer.h"

#include <chrono>

#include "bert/common/error.h"

namespace bert::dist {

namespace {

torch::ScalarType comm_type_of(const std::string& name) {
  if (name == "fp32") return torch::kFloat32;
  if (name == "bf16") return torch::kBFloat16;
  if (name == "fp16") return torch::kFloat16;
  throw UserError("dist.comm_dtype '" + name + "' is not one of fp32, bf16, fp16");
}

}  // namespace

GradientReducer::GradientReducer(Communicator& comm, std::vector<torch::Tensor> params, int64_t bucket_bytes,
                                 const std::string& comm_dtype)
    : comm_(comm), params_(std::move(params)), bucket_bytes_(std::max<int64_t>(1, bucket_bytes)),
      comm_type_(comm_type_of(comm_dtype)) {
  plan();
}

GradientReducer::GradientReducer(Communicator& comm, std::vector<torch::Tensor> params)
    : GradientReducer(comm, std::move(params),
                      static_cast<int64_t>(comm.config().bucket_mb * 1024.0 * 1024.0), comm.config().comm_dtype) {}

// Consecutive parameters with the same dtype and device share a bucket until it is full.
void GradientReducer::plan() {
  buckets_.clear();
  flats_.clear();
  int64_t filled = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    if (!p.is_floating_point())
      throw UserError("gradient reducer: parameter " + std::to_string(i) + " is not floating point");
    bool same_kind = !buckets_.empty() && !buckets_.back().empty() &&
                     params_[buckets_.back().front()].scalar_type() == p.scalar_type() &&
                     params_[buckets_.back().front()].device() == p.device();
    if (buckets_.empty() || !same_kind || filled >= bucket_bytes_) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().push_back(i);
    filled += p.numel() * static_cast<int64_t>(c10::elementSize(comm_type_));
  }
}

void GradientReducer::reduce() {
  const int world = comm_.world_size();
  if (world <= 1 || params_.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  const bool gloo = comm_.backend() == "gloo";
  const bool low = comm_type_ != torch::kFloat32;
  torch::NoGradGuard no_grad;

  // every rank sends identical buckets: a missing gradient counts as zero
  for (auto& p : params_)
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);

  // the flat buffers live as long as the reducer: no allocation (or page faults) per step
  if (flats_.size() != buckets_.size()) {
    flats_.clear();
    for (const auto& bucket : buckets_) {
      const auto& first = params_[bucket.front()];
      int64_t n = 0;
      for (size_t i : bucket) n += params_[i].numel();
      auto type = low ? comm_type_ : (first.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32);
      auto device = gloo ? torch::Device(torch::kCPU) : first.device();
      flats_.push_back(torch::empty({n}, torch::TensorOptions().dtype(type).device(device)));
    }
  }
  const auto inv_world = torch::scalar_tensor(1.0 / world, torch::kFloat64);
  const auto world_t = torch::scalar_tensor(static_cast<double>(world), torch::kFloat64);

  for (size_t b = 0; b < buckets_.size(); ++b) {
    int64_t offset = 0;
    for (size_t i : buckets_[b]) {
      const auto& g = params_[i].grad();
      auto slice = flats_[b].narrow(0, offset, g.numel()).view(g.sizes());
      if (low) slice.copy_(g.mul(inv_world));  // pre-divide in the gradient's precision: no overflow
      else slice.copy_(g);
      offset += g.numel();
    }
  }
  comm_.allreduce_async_(flats_);
  comm_.wait_all();

  for (size_t b = 0; b < buckets_.size(); ++b) {
    int64_t offset = 0;
    for (size_t i : buckets_[b]) {
      auto& g = params_[i].mutable_grad();
      auto slice = flats_[b].narrow(0, offset, g.numel()).view(g.sizes());
      if (low) g.copy_(slice);
      else at::div_out(g, slice, world_t);
      offset += g.numel();
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  comm_.add_stats(seconds, 0);
}

}  // namespace bert::dist
