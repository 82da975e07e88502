#pragma once
// Reading a TensorFlow V2 checkpoint (TensorBundle) from disk into LibTorch tensors.
//
//   TensorBundle ckpt("tf_checkpoint/bert_model.ckpt");   // or the .index file, or its directory
//   for (const auto& e : ckpt.entries()) torch::Tensor t = ckpt.read(e);
//
// The index is decoded once (see tensorbundle_index.h); tensors are read one at a time from the
// data shards, each range checked against the shard's size and its CRC-32C verified.
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bert/io/tensorbundle_index.h"

namespace bert::io {

// The checkpoint prefix for `path`: a prefix itself (".../model.ckpt-1000"), its ".index" file, or a
// directory holding a TensorFlow `checkpoint` state file or exactly one "*.index". UserError if none.
std::filesystem::path resolve_tf_checkpoint_prefix(const std::filesystem::path& path);

// True when `path` looks like a TensorFlow checkpoint (for format detection).
bool is_tf_checkpoint(const std::filesystem::path& path);

class TensorBundle {
 public:
  explicit TensorBundle(const std::filesystem::path& path);

  const std::filesystem::path& prefix() const { return prefix_; }
  const BundleHeader& header() const { return index_.header; }
  const std::vector<BundleEntry>& entries() const { return index_.entries; }
  const BundleEntry* find(const std::string& name) const;

  // The tensor of `e`, with its dtype and shape (a fresh CPU tensor that owns its memory).
  torch::Tensor read(const BundleEntry& e) const;
  torch::Tensor read(const std::string& name) const;

 private:
  std::filesystem::path prefix_;
  BundleIndex index_;
};

// torch dtype for a TensorFlow dtype; UserError naming `what` for strings and unknown types.
c10::ScalarType torch_dtype_for_tf(int dtype, const std::string& what);

}  // namespace bert::io
