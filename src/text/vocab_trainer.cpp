// WordPiece vocab training (see vocab_trainer.h): word counting over files on several threads,
// then the merge loop over a lazily updated max-heap of pair counts.
#include "bert/text/vocab_trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <queue>
#include <thread>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/text/tokenizer.h"
#include "utf8.h"

namespace bert::text {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void count_lines(const BasicTokenizer& basic, const std::vector<std::string_view>& lines, size_t b, size_t e,
                 WordCounts& counts, TokenizerStats& ts, uint64_t& nwords) {
  struct Ctx {
    WordCounts* counts;
    uint64_t* nwords;
  } ctx{&counts, &nwords};
  for (size_t i = b; i < e; ++i)
    basic.for_each_word(
        lines[i], &ts,
        [](void* p, const BasicTokenizer::Word& w) {
          if (w.special >= 0) return;  // the specials are in the vocab already
          auto* c = static_cast<Ctx*>(p);
          auto it = c->counts->find(std::string(w.text));
          if (it == c->counts->end())
            c->counts->emplace(std::string(w.text), 1);
          else
            ++it->second;
          ++*c->nwords;
        },
        &ctx);
}

}  // namespace

WordCounts count_words(const std::vector<std::string>& files, const VocabTrainerOptions& opts,
                       VocabTrainerStats* stats) {
  if (files.empty()) throw UserError("no input files; give text files with --input");
  double total = 0;
  for (const auto& f : files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(f, ec)) throw UserError("input file not found: " + f + "; check --input");
    total += static_cast<double>(std::filesystem::file_size(f, ec));
  }
  BasicTokenizer basic(opts.lower_case);
  size_t nthreads = opts.threads > 0 ? static_cast<size_t>(opts.threads) : std::max(1u, std::thread::hardware_concurrency());
  std::vector<WordCounts> per(nthreads);
  std::vector<TokenizerStats> ts(nthreads);
  std::vector<uint64_t> nwords(nthreads, 0);
  uint64_t nlines = 0;
  double done = 0;
  auto t0 = Clock::now();
  auto last = t0;
  std::vector<char> chunk(8 << 20);
  std::string buf, carry;
  std::vector<std::string_view> lines;
  for (const auto& f : files) {
    std::FILE* in = std::fopen(f.c_str(), "rb");
    if (!in) throw UserError("cannot read " + f + ": " + std::strerror(errno));
    bool eof = false;
    carry.clear();
    while (!eof) {
      size_t got = std::fread(chunk.data(), 1, chunk.size(), in);
      if (got < chunk.size()) {
        if (std::ferror(in)) {
          std::fclose(in);
          throw RuntimeError("read error on " + f);
        }
        eof = true;
      }
      done += static_cast<double>(got);
      buf.swap(carry);
      carry.clear();
      buf.append(chunk.data(), got);
      size_t cut = eof ? buf.size() : buf.rfind('\n');
      if (cut == std::string::npos) {
        carry.swap(buf);
        continue;
      }
      if (!eof) carry.assign(buf, cut + 1, std::string::npos);
      std::string_view body(buf.data(), eof ? buf.size() : cut + 1);
      lines.clear();
      for (size_t pos = 0; pos < body.size();) {
        size_t nl = body.find('\n', pos);
        if (nl == std::string_view::npos) nl = body.size();
        lines.push_back(body.substr(pos, nl - pos));
        pos = nl + 1;
      }
      nlines += lines.size();
      size_t per_thread = (lines.size() + nthreads - 1) / nthreads;
      std::vector<std::thread> pool;
      for (size_t t = 1; t < nthreads; ++t) {
        size_t b = std::min(lines.size(), t * per_thread), e = std::min(lines.size(), b + per_thread);
        pool.emplace_back([&, t, b, e] { count_lines(basic, lines, b, e, per[t], ts[t], nwords[t]); });
      }
      count_lines(basic, lines, 0, std::min(lines.size(), per_thread), per[0], ts[0], nwords[0]);
      for (auto& th : pool) th.join();
      if (seconds_since(last) > 5) {
        double rate = done / seconds_since(t0);
        spdlog::info("vocab: counting words {:.0f}% ({}B/s, ETA {})", 100 * done / std::max(total, 1.0),
                     human_count(rate), human_duration((total - done) / rate));
        last = Clock::now();
      }
    }
    std::fclose(in);
  }
  WordCounts counts = std::move(per[0]);
  for (size_t t = 1; t < nthreads; ++t)
    for (auto& [w, c] : per[t]) counts[w] += c;
  if (stats) {
    stats->lines += nlines;
    stats->bytes += static_cast<uint64_t>(done);
    for (size_t t = 0; t < nthreads; ++t) {
      stats->words += nwords[t];
      stats->invalid_utf8_bytes += ts[t].invalid_utf8_bytes;
    }
    stats->distinct_words = counts.size();
  }
  return counts;
}

namespace {

struct PairEntry {
  int64_t count;
  uint64_t pair;  // (left id << 32) | right id
  // max-heap: highest count first, then the smallest pair of ids (as HF's trainer does)
  bool operator<(const PairEntry& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

uint64_t make_pair_key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

}  // namespace

std::vector<std::string> train_wordpiece(const WordCounts& words, const VocabTrainerOptions& opts,
                                         VocabTrainerStats* stats) {
  std::vector<std::string> vocab;
  std::unordered_map<std::string, uint32_t> ids;
  auto add = [&](const std::string& t) -> uint32_t {
    auto it = ids.find(t);
    if (it != ids.end()) return it->second;
    vocab.push_back(t);
    ids.emplace(t, static_cast<uint32_t>(vocab.size() - 1));
    return static_cast<uint32_t>(vocab.size() - 1);
  };
  for (const auto& s : special_tokens()) add(s);
  for (size_t i = 0; i < opts.unused; ++i) add("[unused" + std::to_string(i) + "]");
  if (opts.vocab_size < vocab.size())
    throw UserError("--vocab-size " + std::to_string(opts.vocab_size) + " is smaller than the " +
                    std::to_string(vocab.size()) + " special and [unusedN] tokens; raise it");
  if (words.empty()) throw UserError("the input has no words; give a non-empty text corpus");

  // words in a fixed order, split into code points
  std::vector<std::pair<const std::string*, uint64_t>> order;
  order.reserve(words.size());
  for (const auto& [w, c] : words) order.emplace_back(&w, c);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });

  // the alphabet: the most frequent characters, in code point order
  std::map<char32_t, uint64_t> char_counts;
  auto chars_of = [](const std::string& w, std::vector<std::string_view>& out) {
    out.clear();
    const auto* s = reinterpret_cast<const unsigned char*>(w.data());
    for (size_t i = 0; i < w.size();) {
      char32_t cp;
      size_t len = utf8_decode(s, i, w.size(), cp);
      if (len == 0) len = 1;  // cannot happen: words come from the tokenizer
      out.push_back(std::string_view(w).substr(i, len));
      i += len;
    }
  };
  std::vector<std::string_view> chars;
  for (const auto& [w, c] : order) {
    chars_of(*w, chars);
    for (auto ch : chars) {
      char32_t cp;
      utf8_decode(reinterpret_cast<const unsigned char*>(ch.data()), 0, ch.size(), cp);
      char_counts[cp] += c;
    }
  }
  std::vector<std::pair<char32_t, uint64_t>> kept(char_counts.begin(), char_counts.end());
  if (opts.limit_alphabet > 0 && kept.size() > opts.limit_alphabet) {
    std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    kept.resize(opts.limit_alphabet);
    std::sort(kept.begin(), kept.end());
  }
  std::unordered_map<std::string, bool> alphabet;
  for (const auto& [cp, c] : kept) {
    std::string s;
    utf8_append(s, cp);
    add(s);
    alphabet.emplace(s, true);
  }
  // continuation forms of the characters that occur inside words, in code point order
  std::map<char32_t, bool> inner;
  for (const auto& [w, c] : order) {
    chars_of(*w, chars);
    for (size_t k = 1; k < chars.size(); ++k)
      if (alphabet.count(std::string(chars[k]))) {
        char32_t cp;
        utf8_decode(reinterpret_cast<const unsigned char*>(chars[k].data()), 0, chars[k].size(), cp);
        inner[cp] = true;
      }
  }
  for (const auto& [cp, b] : inner) {
    std::string s(kContinuationPrefix);
    utf8_append(s, cp);
    add(s);
  }
  size_t alphabet_tokens = kept.size() + inner.size();
  if (vocab.size() > opts.vocab_size)
    spdlog::warn("vocab: the alphabet alone has {} symbols, more than --vocab-size {}; no merges done (raise "
                 "--vocab-size or lower --limit-alphabet)",
                 vocab.size(), opts.vocab_size);

  // words as symbol ids
  std::vector<std::vector<uint32_t>> syms(order.size());
  std::vector<int64_t> counts(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    counts[i] = static_cast<int64_t>(order[i].second);
    chars_of(*order[i].first, chars);
    for (size_t k = 0; k < chars.size(); ++k) {
      std::string c(chars[k]);
      if (!alphabet.count(c)) continue;
      syms[i].push_back(ids.at(k == 0 ? c : std::string(kContinuationPrefix) + c));
    }
  }
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where;
  for (size_t i = 0; i < syms.size(); ++i)
    for (size_t k = 0; k + 1 < syms[i].size(); ++k) {
      uint64_t p = make_pair_key(syms[i][k], syms[i][k + 1]);
      pair_count[p] += counts[i];
      where[p].push_back(static_cast<uint32_t>(i));
    }
  std::priority_queue<PairEntry> heap;
  for (const auto& [p, c] : pair_count)
    if (c > 0) heap.push({c, p});

  auto t0 = Clock::now();
  auto last = t0;
  size_t start_size = vocab.size();
  uint64_t merges = 0;
  std::vector<uint64_t> touched;
  while (vocab.size() < opts.vocab_size && !heap.empty()) {
    PairEntry top = heap.top();
    heap.pop();
    int64_t cur = pair_count[top.pair];
    if (cur != top.count) {  // stale entry
      if (cur > 0) heap.push({cur, top.pair});
      continue;
    }
    if (top.count < 1 || static_cast<uint64_t>(top.count) < opts.min_frequency) break;
    uint32_t a = static_cast<uint32_t>(top.pair >> 32), b = static_cast<uint32_t>(top.pair & 0xFFFFFFFFu);
    std::string right = vocab[b];
    if (is_continuation(right)) right = right.substr(kContinuationPrefix.size());
    uint32_t merged = add(vocab[a] + right);
    ++merges;

    auto change = [&](uint32_t x, uint32_t y, int64_t delta, uint32_t w) {
      uint64_t p = make_pair_key(x, y);
      pair_count[p] += delta;
      if (delta > 0) {
        where[p].push_back(w);
        touched.push_back(p);
      }
    };
    std::vector<uint32_t> pos = std::move(where[top.pair]);
    where.erase(top.pair);
    std::sort(pos.begin(), pos.end());
    pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
    touched.clear();
    for (uint32_t w : pos) {
      auto& s = syms[w];
      int64_t c = counts[w];
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        if (s[i] != a || s[i + 1] != b) continue;
        if (i > 0) {
          change(s[i - 1], a, -c, w);
          change(s[i - 1], merged, c, w);
        }
        if (i + 2 < s.size()) {
          change(b, s[i + 2], -c, w);
          change(merged, s[i + 2], c, w);
        }
        s[i] = merged;
        s.erase(s.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      }
    }
    pair_count[top.pair] = 0;
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (uint64_t p : touched) {
      int64_t c = pair_count[p];
      if (c > 0) heap.push({c, p});
    }
    if (seconds_since(last) > 5) {
      double rate = static_cast<double>(vocab.size() - start_size) / seconds_since(t0);
      spdlog::info("vocab: {} / {} tokens ({:.0f} merges/s, ETA {})", vocab.size(), opts.vocab_size, rate,
                   human_duration(static_cast<double>(opts.vocab_size - vocab.size()) / std::max(rate, 1e-9)));
      last = Clock::now();
    }
  }
  if (stats) {
    stats->alphabet = alphabet_tokens;
    stats->merges = merges;
  }
  return vocab;
}

}  // namespace bert::text
