#pragma once
// The process group every rank-aware part of training talks to.
//
//   auto env = dist::detect_launch_env();
//   auto comm = dist::Communicator::create(env, cfg.dist, device.collective_backend());
//   comm->broadcast_({params...});            // rank 0's weights everywhere
//   ... backward, gradient accumulation ...
//   reducer.reduce();                          // bert/dist/grad_reducer.h: average the gradients
//   auto loss = comm->allreduce(local_loss, dist::Reduce::Mean);
//   comm->finish();                            // clean shutdown (waits for every rank)
//
// With world size 1 every call is a cheap no-op, so callers need no special case.
// Built on LibTorch's c10d: rendezvous through a TCPStore hosted by rank 0 (with a timeout that
// names the missing ranks), Gloo on CPU, NCCL on CUDA when LibTorch has it. Every rank beats a
// heartbeat into the store; when a collective fails or times out, the survivors read the
// heartbeats and the error names the lost rank(s). c10d types stay inside src/dist/.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bert/dist/dist_config.h"
#include "bert/dist/launch_env.h"

namespace bert::dist {

enum class Reduce { Sum, Mean, Max, Min };

// Communication time and volume since the last take_stats(), for the step log.
struct CommStats {
  double seconds = 0;    // exposed wall time: the caller waited on collectives (incl. flatten/copy)
  double total_seconds = 0;  // wall time collectives were in flight, overlapped or not (>= seconds)
  int64_t bytes = 0;     // payload bytes sent into collectives by this rank
  int64_t calls = 0;     // collectives issued
};

class Communicator {
 public:
  // Joins the group described by `env` (no network for world size 1). `device_backend` is the
  // device's collective backend ("gloo", "nccl", "hccl"), used when cfg.backend is "auto".
  // RuntimeError when ranks do not all join within cfg.rendezvous_timeout_s ("waiting for 4
  // ranks at host:port, 3 joined after 60 s; missing ranks: 2"); UserError for an unusable
  // backend.
  static std::unique_ptr<Communicator> create(const LaunchEnv& env, const DistConfig& cfg,
                                              const std::string& device_backend = "gloo");
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int world_size() const;
  int local_rank() const;
  bool is_main() const { return rank() == 0; }
  const std::string& backend() const;  // "gloo", "nccl" or "none" (single process)
  const DistConfig& config() const;

  // In place, all tensors in one collective each. Tensors must have identical shapes and dtypes
  // on every rank. Mean divides after summing (integers: floor division).
  void allreduce_(std::vector<torch::Tensor>& tensors, Reduce op = Reduce::Sum);
  // Convenience for metrics: returns the reduced copy of `t` (any device; result on t's device).
  torch::Tensor allreduce(const torch::Tensor& t, Reduce op = Reduce::Sum);
  // Overwrite `tensors` with rank `root`'s values (parameters and buffers at start).
  void broadcast_(std::vector<torch::Tensor>& tensors, int root = 0);
  void barrier();

  // Start collectives without waiting (used by the gradient reducer to keep several buckets in
  // flight); wait_all() waits for every pending one and converts failures into a clear error.
  void allreduce_async_(std::vector<torch::Tensor>& tensors);  // sum
  void wait_all();

  CommStats take_stats();
  // For callers that time their own wrapping; total_seconds < 0 means "same as seconds"
  // (nothing overlapped).
  void add_stats(double seconds, int64_t bytes, double total_seconds = -1);

  // Clean shutdown: every rank says it is done; rank 0 (which hosts the store) waits for the
  // others so nobody loses the store mid-call. Also run by the destructor (without waiting when
  // a collective already failed).
  void finish();

  struct Impl;

 private:
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bert::dist
