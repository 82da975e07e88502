#pragma once
// BERT's tokenizer: BasicTokenizer (cleanup, CJK spacing, lower-casing + accent stripping when
// uncased, punctuation split, never-split specials) followed by greedy longest-match-first
// WordPiece. Behaviour matches Google's tokenization.py and HF's BertTokenizer.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bert::text {

// The vocabulary: one token per line, id = line number. Loading validates duplicates and
// the special tokens [PAD] [UNK] [CLS] [SEP] [MASK] (UserError naming the file otherwise).
class Vocab {
 public:
  static Vocab load(const std::string& path);
  static Vocab from_tokens(std::vector<std::string> tokens);  // same validation
  int32_t id(std::string_view token) const;                   // -1 when absent
  const std::string& token(int32_t id) const;
  size_t size() const { return tokens_.size(); }
  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  int32_t cls_id() const { return cls_; }
  int32_t sep_id() const { return sep_; }
  int32_t mask_id() const { return mask_; }
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> index_;
  int32_t pad_ = -1, unk_ = -1, cls_ = -1, sep_ = -1, mask_ = -1;
};

struct TokenizerOptions {
  bool lower_case = true;          // uncased: lower-case + strip accents
  size_t max_word_chars = 100;     // longer words become [UNK]
};

struct TokenizerStats {
  uint64_t invalid_utf8_bytes = 0;  // skipped, as the references do
};

class FullTokenizer {
 public:
  FullTokenizer(Vocab vocab, TokenizerOptions opts);
  std::vector<std::string> tokenize(std::string_view text, TokenizerStats* stats = nullptr) const;
  std::vector<int32_t> encode(std::string_view text, TokenizerStats* stats = nullptr) const;  // no [CLS]/[SEP]
  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return opts_; }

 private:
  Vocab vocab_;
  TokenizerOptions opts_;
};

}  // namespace bert::text
