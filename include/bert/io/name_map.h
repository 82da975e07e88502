#pragma once
// Renaming checkpoint variables between naming schemes with a table of rules, and the common
// result of every import (weights under HF names plus what was left out and why).
//
// A rule maps one pattern to another; "{N}" stands for a layer number (decimal digits) and is
// carried over. Tables run in both directions (reversed()), so one table is the whole truth about
// a scheme, and `transpose` says whether the 2-D weight is stored the other way round.
#include <torch/torch.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bert/model/model_config.h"

namespace bert::io {

struct NameRule {
  std::string from;
  std::string to;
  bool transpose = false;
};

struct NameMatch {
  std::string name;
  bool transpose = false;
};

// The first rule whose `from` matches `name` exactly (with {N} = digits), applied; nullopt if none.
std::optional<NameMatch> apply_name_rules(const std::vector<NameRule>& rules, const std::string& name);
// The same table read the other way (to -> from).
std::vector<NameRule> reversed(const std::vector<NameRule>& rules);

// What an import produced.
struct ImportedWeights {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  // HF names, source order
  std::vector<std::string> skipped;   // "name (why)": non-weights deliberately left out
  std::vector<std::string> unmapped;  // source names no rule knows (left out; report them as unexpected)
  std::vector<std::string> notes;     // adjustments made: transposes, vocab trimming
  std::optional<ModelConfig> config;  // from bert_config.json when one was found or given

  const torch::Tensor* find(const std::string& hf_name) const;
  // One line: "<n> tensors, <k> skipped (...), <u> unmapped".
  std::string summary() const;
  // Logs the summary, then the skipped/unmapped names and notes at debug/warn level.
  void log(const std::string& source) const;
};

}  // namespace bert::io
