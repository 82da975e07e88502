// FullTokenizer: BasicTokenizer words -> greedy longest-match-first WordPiece ids, one line or
// a batch of lines on several threads.
#include <algorithm>
#include <atomic>
#include <thread>

#include "bert/common/error.h"
#include "bert/text/tokenizer.h"
#include "utf8.h"

namespace bert::text {

FullTokenizer::FullTokenizer(Vocab vocab, TokenizerOptions opts)
    : vocab_(std::move(vocab)), opts_(opts), basic_(opts.lower_case, special_tokens()) {
  for (const auto& t : basic_.never_split()) {
    int32_t id = vocab_.id(t);
    if (id < 0) throw UserError("vocab has no " + t + " token; add it or use a BERT vocab");
    special_ids_.push_back(id);
  }
}

void FullTokenizer::wordpiece(std::string_view word, size_t chars, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (chars > opts_.max_word_chars) {
    out.push_back(vocab_.unk_id());
    return;
  }
  const auto& first = vocab_.word_start_index();
  const auto& cont = vocab_.continuation_index();
  const size_t n = word.size();
  const size_t mark = out.size();
  size_t start = 0;
  while (start < n) {
    const auto& index = start == 0 ? first : cont;
    size_t end = std::min(n, start + index.max_key_bytes());
    while (end < n && utf8_is_continuation_byte(word[end])) --end;  // back to a character boundary
    int32_t id = -1;
    while (end > start) {
      id = index.find(word.substr(start, end - start));
      if (id >= 0) break;
      --end;
      while (end > start && utf8_is_continuation_byte(word[end])) --end;
    }
    if (id < 0) {  // some piece is not in the vocab: the whole word is [UNK]
      out.resize(mark);
      out.push_back(vocab_.unk_id());
      return;
    }
    out.push_back(id);
    start = end;
  }
}

void FullTokenizer::encode_into(std::string_view text, std::vector<int32_t>& out, TokenizerStats* stats) const {
  struct Ctx {
    const FullTokenizer* self;
    std::vector<int32_t>* out;
  } ctx{this, &out};
  basic_.for_each_word(
      text, stats,
      [](void* p, const BasicTokenizer::Word& w) {
        auto* c = static_cast<Ctx*>(p);
        if (w.special >= 0)
          c->out->push_back(c->self->special_ids_[static_cast<size_t>(w.special)]);
        else
          c->self->wordpiece(w.text, w.chars, *c->out);
      },
      &ctx);
}

std::vector<int32_t> FullTokenizer::encode(std::string_view text, TokenizerStats* stats) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  encode_into(text, out, stats);
  return out;
}

std::vector<std::string> FullTokenizer::tokenize(std::string_view text, TokenizerStats* stats) const {
  std::vector<std::string> out;
  for (int32_t id : encode(text, stats)) out.push_back(vocab_.token(id));
  return out;
}

template <class Line>
static std::vector<std::vector<int32_t>> encode_many(const FullTokenizer& tok, const std::vector<Line>& lines,
                                                     int threads, TokenizerStats* stats) {
  std::vector<std::vector<int32_t>> out(lines.size());
  size_t nthreads = threads > 0 ? static_cast<size_t>(threads) : std::max(1u, std::thread::hardware_concurrency());
  constexpr size_t kBlock = 256;  // lines per work item
  nthreads = std::min(nthreads, (lines.size() + kBlock - 1) / kBlock);
  if (nthreads <= 1) {
    for (size_t i = 0; i < lines.size(); ++i) out[i] = tok.encode(lines[i], stats);
    return out;
  }
  std::atomic<size_t> next{0};
  std::vector<TokenizerStats> per(nthreads);
  auto work = [&](size_t t) {
    for (;;) {
      size_t b = next.fetch_add(kBlock);
      if (b >= lines.size()) return;
      size_t e = std::min(lines.size(), b + kBlock);
      for (size_t i = b; i < e; ++i) out[i] = tok.encode(lines[i], &per[t]);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < nthreads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  if (stats)
    for (const auto& s : per) stats->add(s);
  return out;
}

std::vector<std::vector<int32_t>> FullTokenizer::encode_batch(const std::vector<std::string>& lines, int threads,
                                                              TokenizerStats* stats) const {
  return encode_many(*this, lines, threads, stats);
}

std::vector<std::vector<int32_t>> FullTokenizer::encode_batch(const std::vector<std::string_view>& lines,
                                                              int threads, TokenizerStats* stats) const {
  return encode_many(*this, lines, threads, stats);
}

}  // namespace bert::text
