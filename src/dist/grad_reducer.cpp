// Bucketed gradient averaging, post-hoc or overlapped with backward (see bert/dist/grad_reducer.h).
#include "bert/dist/grad_reducer.h"

#include <chrono>
#include <mutex>

#include "bert/common/error.h"

namespace bert::dist {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

torch::ScalarType comm_type_of(const std::string& name) {
  if (name == "fp32") return torch::kFloat32;
  if (name == "bf16") return torch::kBFloat16;
  if (name == "fp16") return torch::kFloat16;
  throw UserError("dist.comm_dtype '" + name + "' is not one of fp32, bf16, fp16");
}

}  // namespace

// What the autograd hooks share with the reducer. The hooks hold it by shared_ptr and check
// `owner`, so a hook that outlives the reducer does nothing.
struct GradientReducer::Hooks {
  std::mutex mu;  // hooks may run on autograd's device threads
  GradientReducer* owner = nullptr;
  std::vector<unsigned> handles;  // per parameter, for remove_hook
  bool armed = false;
  std::vector<char> arrived;      // per parameter: packed during this backward
  std::vector<int64_t> missing;   // per bucket: parameters still to arrive
  size_t next_launch = 0;         // buckets [0, next_launch) are in flight
  bool started = false;
  Clock::time_point first;        // first gradient packed
  double pack_seconds = 0;        // time spent packing inside hooks (on the backward path)
};

GradientReducer::GradientReducer(Communicator& comm, std::vector<torch::Tensor> params, int64_t bucket_bytes,
                                 const std::string& comm_dtype, bool overlap)
    : comm_(comm), params_(std::move(params)), bucket_bytes_(std::max<int64_t>(1, bucket_bytes)),
      comm_type_(comm_type_of(comm_dtype)), overlap_(overlap && comm.world_size() > 1) {
  plan();
  if (!overlap_) return;
  hooks_ = std::make_shared<Hooks>();
  hooks_->owner = this;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].requires_grad())
      throw UserError("gradient reducer: parameter " + std::to_string(i) + " does not require a gradient");
    std::shared_ptr<Hooks> h = hooks_;
    hooks_->handles.push_back(params_[i].register_hook([h, i](const torch::Tensor& g) {
      std::lock_guard<std::mutex> lock(h->mu);
      if (!h->owner || !h->armed || !g.defined() || h->arrived[i]) return;
      auto t = Clock::now();
      if (!h->started) {
        h->started = true;
        h->first = t;
      }
      h->owner->pack(i, g);
      h->arrived[i] = 1;
      --h->missing[h->owner->bucket_of_[i]];
      h->owner->launch_ready();
      h->pack_seconds += since(t);
    }));
  }
}

GradientReducer::GradientReducer(Communicator& comm, std::vector<torch::Tensor> params)
    : GradientReducer(comm, std::move(params), static_cast<int64_t>(comm.config().bucket_mb * 1024.0 * 1024.0),
                      comm.config().comm_dtype, comm.config().overlap_backward) {}

GradientReducer::~GradientReducer() {
  if (!hooks_) return;
  std::lock_guard<std::mutex> lock(hooks_->mu);
  hooks_->owner = nullptr;
  for (size_t i = 0; i < hooks_->handles.size(); ++i) {
    try {
      params_[i].remove_hook(hooks_->handles[i]);
    } catch (const std::exception&) {
      // the hook stays registered but is inert (owner is null)
    }
  }
}

// Walking the parameters backwards (backward produces the last layers' gradients first),
// consecutive parameters with the same dtype and device share a bucket until it is full.
void GradientReducer::plan() {
  buckets_.clear();
  flats_.clear();
  bucket_of_.assign(params_.size(), 0);
  offset_of_.assign(params_.size(), 0);
  int64_t filled = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const auto& p = params_[k];
    if (!p.is_floating_point())
      throw UserError("gradient reducer: parameter " + std::to_string(k) + " is not floating point");
    bool same_kind = !buckets_.empty() && !buckets_.back().empty() &&
                     params_[buckets_.back().front()].scalar_type() == p.scalar_type() &&
                     params_[buckets_.back().front()].device() == p.device();
    if (buckets_.empty() || !same_kind || filled >= bucket_bytes_) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().push_back(k);
    filled += p.numel() * static_cast<int64_t>(c10::elementSize(comm_type_));
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    int64_t offset = 0;
    for (size_t i : buckets_[b]) {
      bucket_of_[i] = b;
      offset_of_[i] = static_cast<size_t>(offset);
      offset += params_[i].numel();
    }
  }
}

// The flat buffers live as long as the reducer: no allocation (or page faults) per step.
void GradientReducer::allocate() {
  if (flats_.size() == buckets_.size()) return;
  const bool gloo = comm_.backend() == "gloo";
  const bool low = comm_type_ != torch::kFloat32;
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

// Parameter i's gradient into its bucket slot: `incoming` (undefined: none this backward) on top
// of what .grad already holds; a low-precision bucket gets it pre-divided by the world size.
void GradientReducer::pack(size_t i, const torch::Tensor& incoming) {
  torch::NoGradGuard no_grad;
  const auto& p = params_[i];
  const auto& existing = p.grad();
  auto slice = flats_[bucket_of_[i]].narrow(0, static_cast<int64_t>(offset_of_[i]), p.numel()).view(p.sizes());
  torch::Tensor g;
  if (incoming.defined()) g = existing.defined() ? existing + incoming : incoming;
  else if (existing.defined()) g = existing;
  else {
    slice.zero_();
    return;
  }
  if (comm_type_ != torch::kFloat32)
    slice.copy_(g.mul(torch::scalar_tensor(1.0 / comm_.world_size(), torch::kFloat64)));  // no overflow
  else slice.copy_(g);
}

void GradientReducer::launch_ready() {
  auto& h = *hooks_;
  while (h.next_launch < buckets_.size() && h.missing[h.next_launch] == 0) {
    std::vector<torch::Tensor> one = {flats_[h.next_launch]};
    comm_.allreduce_async_(one);
    ++h.next_launch;
  }
}

void GradientReducer::arm_overlap() {
  if (!overlap_ || params_.empty()) return;
  allocate();
  std::lock_guard<std::mutex> lock(hooks_->mu);
  auto& h = *hooks_;
  h.armed = true;
  h.arrived.assign(params_.size(), 0);
  h.missing.clear();
  for (const auto& bucket : buckets_) h.missing.push_back(static_cast<int64_t>(bucket.size()));
  h.next_launch = 0;
  h.started = false;
  h.pack_seconds = 0;
}

size_t GradientReducer::buckets_in_flight() const {
  if (!hooks_) return 0;
  std::lock_guard<std::mutex> lock(hooks_->mu);
  return hooks_->armed ? hooks_->next_launch : 0;
}

// Every parameter's .grad becomes its bucket slot divided by the world size (a missing gradient
// becomes zeros first, as the slot held zeros or the earlier .grad).
void GradientReducer::copy_back() {
  torch::NoGradGuard no_grad;
  const bool low = comm_type_ != torch::kFloat32;
  const auto world_t = torch::scalar_tensor(static_cast<double>(comm_.world_size()), torch::kFloat64);
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    auto& g = p.mutable_grad();
    auto slice = flats_[bucket_of_[i]].narrow(0, static_cast<int64_t>(offset_of_[i]), g.numel()).view(g.sizes());
    if (low) g.copy_(slice);
    else at::div_out(g, slice, world_t);
  }
}

void GradientReducer::reduce() {
  const int world = comm_.world_size();
  if (world <= 1 || params_.empty()) return;
  const auto start = Clock::now();
  bool armed = false;
  double pack_seconds = 0;
  Clock::time_point first = start;
  if (hooks_) {
    std::lock_guard<std::mutex> lock(hooks_->mu);
    auto& h = *hooks_;
    armed = h.armed;
    if (armed) {
      h.armed = false;
      // what backward did not deliver (unused parameters): the earlier .grad or zeros, then
      // every remaining bucket goes out, still in bucket order
      for (size_t i = 0; i < params_.size(); ++i)
        if (!h.arrived[i]) {
          pack(i, torch::Tensor());
          h.arrived[i] = 1;
          --h.missing[bucket_of_[i]];
        }
      launch_ready();
      pack_seconds = h.pack_seconds;
      if (h.started) first = h.first;
    }
  }
  if (!armed) {
    allocate();
    for (size_t i = 0; i < params_.size(); ++i) pack(i, torch::Tensor());
    comm_.allreduce_async_(flats_);
  }
  comm_.wait_all();
  copy_back();
  const double exposed = since(start) + pack_seconds;
  comm_.add_stats(exposed, 0, armed ? std::max(exposed, since(first)) : -1);
}

}  // namespace bert::dist
