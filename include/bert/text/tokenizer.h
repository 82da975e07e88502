#pragma once
// BERT's tokenizer: BasicTokenizer (cleanup, CJK spacing, lower-casing + accent stripping when
// uncased, punctuation split, never-split specials) followed by greedy longest-match-first
// WordPiece. Behaviour matches Google's tokenization.py and HF's BertTokenizer /
// BertWordPieceTokenizer (token ids checked against HF's Rust tokenizer by
// scripts/parity_tokenizer.sh; see docs/tokenizer.md for the few reference quirks).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bert::text {

// WordPiece continuation prefix: "##ing" continues the previous piece of the same word.
inline constexpr std::string_view kContinuationPrefix = "##";
inline bool is_continuation(std::string_view token) {
  return token.size() > 2 && token[0] == '#' && token[1] == '#';
}

// The special tokens every vocab must have; never split by the tokenizer.
inline const std::vector<std::string>& special_tokens() {
  static const std::vector<std::string> s = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  return s;
}

namespace detail {
// Open-addressing string -> id table that looks keys up by string_view (no substring built).
class PieceIndex {
 public:
  void build(const std::vector<std::pair<std::string_view, int32_t>>& keys);
  int32_t find(std::string_view key) const;  // -1 when absent
  size_t max_key_bytes() const { return max_len_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* data = nullptr;
    uint32_t len = 0;
    int32_t id = -1;
  };
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t max_len_ = 0;
};
}  // namespace detail

// The vocabulary: one token per line, id = line number. Loading validates duplicates, empty
// lines, invalid UTF-8 and the special tokens [PAD] [UNK] [CLS] [SEP] [MASK] (UserError naming
// the file and the fix otherwise).
class Vocab {
 public:
  static Vocab load(const std::string& path);
  // `source` names the vocab in error messages.
  static Vocab from_tokens(std::vector<std::string> tokens, const std::string& source = "vocab");
  Vocab() = default;
  Vocab(const Vocab& o) { *this = o; }
  Vocab& operator=(const Vocab& o);
  Vocab(Vocab&&) = default;
  Vocab& operator=(Vocab&&) = default;

  int32_t id(std::string_view token) const { return full_.find(token); }  // -1 when absent
  // Id of "##" + piece, found without building the string; -1 when absent.
  int32_t continuation_id(std::string_view piece) const { return cont_.find(piece); }
  bool is_continuation(int32_t id) const { return text::is_continuation(token(id)); }
  const std::string& token(int32_t id) const;  // RuntimeError when out of range
  size_t size() const { return tokens_.size(); }
  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  int32_t cls_id() const { return cls_; }
  int32_t sep_id() const { return sep_; }
  int32_t mask_id() const { return mask_; }
  const std::vector<std::string>& tokens() const { return tokens_; }
  const detail::PieceIndex& word_start_index() const { return full_; }
  const detail::PieceIndex& continuation_index() const { return cont_; }

 private:
  void index();
  std::vector<std::string> tokens_;
  detail::PieceIndex full_, cont_;
  int32_t pad_ = -1, unk_ = -1, cls_ = -1, sep_ = -1, mask_ = -1;
};

struct TokenizerOptions {
  bool lower_case = true;          // uncased: lower-case + strip accents
  size_t max_word_chars = 100;     // longer words become [UNK]
};

struct TokenizerStats {
  uint64_t invalid_utf8_bytes = 0;  // skipped, as the references do
  void add(const TokenizerStats& o) { invalid_utf8_bytes += o.invalid_utf8_bytes; }
};

// The BasicTokenizer step on its own (SQuAD post-processing needs it): cleanup, whitespace
// split, CJK spacing, lower-case + NFD accent strip when uncased, punctuation split. Tokens in
// `never_split` (by default the five specials) are matched in the raw text and kept whole.
class BasicTokenizer {
 public:
  explicit BasicTokenizer(bool lower_case = true, std::vector<std::string> never_split = special_tokens());
  std::vector<std::string> tokenize(std::string_view text, TokenizerStats* stats = nullptr) const;

  // Calls fn(word, never_split_index) for every word in order; never_split_index is the index
  // into never_split() for a matched never-split token and -1 otherwise. `word` stays valid only
  // during the call. chars = number of code points in `word`. `fn` must not tokenize on the same
  // thread (the word may live in this thread's scratch buffer).
  struct Word {
    std::string_view text;
    size_t chars;
    int special;
  };
  using WordFn = void (*)(void* ctx, const Word& w);
  void for_each_word(std::string_view text, TokenizerStats* stats, WordFn fn, void* ctx) const;

  bool lower_case() const { return lower_case_; }
  const std::vector<std::string>& never_split() const { return never_split_; }

 private:
  bool lower_case_;
  std::vector<std::string> never_split_;
  std::array<bool, 256> starts_never_split_{};  // first bytes of the never-split tokens
};

class FullTokenizer {
 public:
  FullTokenizer(Vocab vocab, TokenizerOptions opts);
  std::vector<std::string> tokenize(std::string_view text, TokenizerStats* stats = nullptr) const;
  std::vector<int32_t> encode(std::string_view text, TokenizerStats* stats = nullptr) const;  // no [CLS]/[SEP]
  // Appends the ids of `text` to `out` (no allocation when `out` has room).
  void encode_into(std::string_view text, std::vector<int32_t>& out, TokenizerStats* stats = nullptr) const;
  // WordPiece of one already basic-tokenized word, appended to `out`.
  void wordpiece(std::string_view word, size_t chars, std::vector<int32_t>& out) const;
  // Many lines on `threads` threads (0 = all cores); result i belongs to lines[i]; stats summed.
  std::vector<std::vector<int32_t>> encode_batch(const std::vector<std::string>& lines, int threads,
                                                 TokenizerStats* stats = nullptr) const;
  std::vector<std::vector<int32_t>> encode_batch(const std::vector<std::string_view>& lines, int threads,
                                                 TokenizerStats* stats = nullptr) const;
  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return opts_; }
  const BasicTokenizer& basic() const { return basic_; }

 private:
  Vocab vocab_;
  TokenizerOptions opts_;
  BasicTokenizer basic_;
  std::vector<int32_t> special_ids_;  // id of basic_.never_split()[i]
};

}  // namespace bert::text
