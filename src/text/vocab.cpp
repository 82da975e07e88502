// Vocab: loading + validation of vocab.txt and the string_view hash index used by WordPiece.
#include <cstring>
#include <unordered_map>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/text/tokenizer.h"
#include "utf8.h"

namespace bert::text {

namespace detail {

void PieceIndex::build(const std::vector<std::pair<std::string_view, int32_t>>& keys) {
  size_t cap = 16;
  while (cap < keys.size() * 2 + 1) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  max_len_ = 0;
  for (const auto& [key, id] : keys) {
    uint64_t h = hash_bytes(key.data(), key.size());
    uint64_t i = h & mask_;
    while (slots_[i].id >= 0) i = (i + 1) & mask_;
    slots_[i] = Slot{h, key.data(), static_cast<uint32_t>(key.size()), id};
    if (key.size() > max_len_) max_len_ = key.size();
  }
}

int32_t PieceIndex::find(std::string_view key) const {
  if (slots_.empty() || key.size() > max_len_) return -1;
  uint64_t h = hash_bytes(key.data(), key.size());
  uint64_t i = h & mask_;
  for (;;) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == h && s.len == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0) return s.id;
    i = (i + 1) & mask_;
  }
}

}  // namespace detail

Vocab& Vocab::operator=(const Vocab& o) {
  if (this == &o) return *this;
  tokens_ = o.tokens_;
  index();  // the index points into tokens_, so it is rebuilt rather than copied
  return *this;
}

void Vocab::index() {
  std::vector<std::pair<std::string_view, int32_t>> full, cont;
  full.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    std::string_view t = tokens_[i];
    full.emplace_back(t, static_cast<int32_t>(i));
    if (text::is_continuation(t)) cont.emplace_back(t.substr(2), static_cast<int32_t>(i));
  }
  full_.build(full);
  cont_.build(cont);
  pad_ = full_.find("[PAD]");
  unk_ = full_.find("[UNK]");
  cls_ = full_.find("[CLS]");
  sep_ = full_.find("[SEP]");
  mask_ = full_.find("[MASK]");
}

const std::string& Vocab::token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size())
    throw RuntimeError("token id " + std::to_string(id) + " is outside the vocab (size " +
                       std::to_string(tokens_.size()) + ")");
  return tokens_[static_cast<size_t>(id)];
}

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::string& source) {
  if (tokens.empty()) throw UserError("vocab " + source + " is empty; use a BERT vocab.txt (one token per line)");
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(tokens.size() * 2);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    std::string line = " line " + std::to_string(i + 1);
    if (t.empty())
      throw UserError("vocab " + source + line + " is empty; remove it (it would shift every id after it)");
    if (utf8_invalid_bytes(t) != 0)
      throw UserError("vocab " + source + line + " is not valid UTF-8; re-save the file as UTF-8");
    auto [it, fresh] = seen.emplace(t, i);
    if (!fresh)
      throw UserError("vocab " + source + " has the token '" + t + "' twice (lines " + std::to_string(it->second + 1) +
                      " and " + std::to_string(i + 1) + "); remove the duplicate");
  }
  Vocab v;
  v.tokens_ = std::move(tokens);
  v.index();
  for (const auto& s : special_tokens())
    if (v.id(s) < 0) throw UserError("vocab " + source + " has no " + s + " token; add it or use a BERT vocab");
  return v;
}

Vocab Vocab::load(const std::string& path) {
  require_file(path, "vocab file");
  std::string data = read_file(path);
  std::vector<std::string> tokens;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) nl = data.size();
    size_t end = nl;
    // trailing whitespace (\r of Windows files, stray spaces) is not part of the token, as in HF
    while (end > pos && (data[end - 1] == '\r' || data[end - 1] == ' ' || data[end - 1] == '\t')) --end;
    tokens.emplace_back(data, pos, end - pos);
    pos = nl + 1;
  }
  return from_tokens(std::move(tokens), "file " + path);
}

}  // namespace bert::text
