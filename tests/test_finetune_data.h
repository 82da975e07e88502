#pragma once
// Tiny GLUE-style data shared by the fine-tuning tests.
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace bert::test {

// Sentences of 3-6 random words; label 1 exactly when "good" is among them.
inline std::string sst_tsv(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> pool = {"the", "cat", "dog", "sat", "on", "a", "mat", "ran", "to", "park", "red", "blue"};
  std::ostringstream o;
  o << "sentence\tlabel\n";
  for (int i = 0; i < n; ++i) {
    int len = 3 + static_cast<int>(rng() % 4);
    bool pos = i % 2 == 0;
    std::vector<std::string> ws;
    for (int k = 0; k < len; ++k) ws.push_back(pool[rng() % pool.size()]);
    if (pos) ws[rng() % ws.size()] = "good";
    for (size_t k = 0; k < ws.size(); ++k) o << (k ? " " : "") << ws[k];
    o << "\t" << (pos ? 1 : 0) << "\n";
  }
  return o.str();
}

}  // namespace bert::test
