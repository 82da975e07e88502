// Rule tables for renaming checkpoint variables, and the ImportedWeights report.
#include "bert/io/name_map.h"

#include <spdlog/spdlog.h>

#include <cctype>

#include "bert/common/strings.h"

namespace bert::io {

namespace {

constexpr std::string_view kLayer = "{N}";

// Matches `name` against `pattern`; on success stores the digits that matched {N} (or "").
bool match_pattern(std::string_view pattern, std::string_view name, std::string& number) {
  auto at = pattern.find(kLayer);
  if (at == std::string_view::npos) {
    number.clear();
    return pattern == name;
  }
  std::string_view head = pattern.substr(0, at), tail = pattern.substr(at + kLayer.size());
  if (name.size() <= head.size() + tail.size()) return false;
  if (name.substr(0, head.size()) != head || name.substr(name.size() - tail.size()) != tail) return false;
  std::string_view mid = name.substr(head.size(), name.size() - head.size() - tail.size());
  if (mid.size() > 6) return false;
  for (char c : mid)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  if (mid.size() > 1 && mid[0] == '0') return false;  // "layer_01" is not a layer number
  number = std::string(mid);
  return true;
}

}  // namespace

std::optional<NameMatch> apply_name_rules(const std::vector<NameRule>& rules, const std::string& name) {
  std::string number;
  for (const auto& r : rules) {
    if (!match_pattern(r.from, name, number)) continue;
    std::string out = r.to;
    auto at = out.find(kLayer);
    if (at != std::string::npos) out.replace(at, kLayer.size(), number);
    return NameMatch{out, r.transpose};
  }
  return std::nullopt;
}

std::vector<NameRule> reversed(const std::vector<NameRule>& rules) {
  std::vector<NameRule> out;
  out.reserve(rules.size());
  for (const auto& r : rules) out.push_back({r.to, r.from, r.transpose});
  return out;
}

const torch::Tensor* ImportedWeights::find(const std::string& hf_name) const {
  for (const auto& [n, t] : tensors)
    if (n == hf_name) return &t;
  return nullptr;
}

std::string ImportedWeights::summary() const {
  int64_t params = 0;
  for (const auto& [n, t] : tensors) params += t.numel();
  std::string s = std::to_string(tensors.size()) + " tensors (" + human_count(static_cast<double>(params)) +
                  " values), " + std::to_string(skipped.size()) + " non-weights skipped, " +
                  std::to_string(unmapped.size()) + " unmapped";
  return s;
}

void ImportedWeights::log(const std::string& source) const {
  spdlog::info("imported {}: {}", source, summary());
  for (const auto& n : notes) spdlog::info("  {}", n);
  for (const auto& s : skipped) spdlog::debug("  skipped {}", s);
  for (const auto& u : unmapped) spdlog::warn("  unmapped variable {} (no HF name; left out)", u);
}

}  // namespace bert::io
