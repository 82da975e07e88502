#pragma once
// WordPiece vocabulary training with the algorithm of HF's WordPieceTrainer: special tokens
// first (then optional [unusedN] slots), then the alphabet (single characters, then their "##"
// continuation forms), then BPE-style merges of the most frequent adjacent pair ("##" dropped
// from the right part, so "##a" + "##b" -> "##ab", "a" + "##b" -> "ab") until the vocab has
// `vocab_size` tokens or no pair occurs `min_frequency` times. Words come from our
// BasicTokenizer. Ties are broken deterministically (smallest pair of ids first, alphabet in
// code point order), so a given corpus always gives the same vocab.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace bert::text {

struct VocabTrainerOptions {
  size_t vocab_size = 30522;      // total, specials and [unusedN] included
  uint64_t min_frequency = 2;     // a pair must occur this often to be merged
  bool lower_case = true;         // uncased: lower-case + strip accents, as the tokenizer does
  size_t unused = 0;              // [unused0]..[unusedN-1] slots right after the specials
  size_t limit_alphabet = 1000;   // keep only the most frequent characters (0 = all)
  int threads = 0;                // word counting threads (0 = all cores)
};

struct VocabTrainerStats {
  uint64_t lines = 0, words = 0, distinct_words = 0, bytes = 0;
  uint64_t alphabet = 0, merges = 0;
  uint64_t invalid_utf8_bytes = 0;
};

using WordCounts = std::unordered_map<std::string, uint64_t>;

// Words of the given text files (BasicTokenizer, `opts.lower_case`), counted on `opts.threads`.
WordCounts count_words(const std::vector<std::string>& files, const VocabTrainerOptions& opts,
                       VocabTrainerStats* stats = nullptr);
// The vocab (id order) trained on the counted words.
std::vector<std::string> train_wordpiece(const WordCounts& words, const VocabTrainerOptions& opts,
                                         VocabTrainerStats* stats = nullptr);

}  // namespace bert::text
