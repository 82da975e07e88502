// BasicTokenizer: one left-to-right pass over the raw bytes that cleans, splits on whitespace,
// isolates punctuation and CJK ideographs, keeps never-split tokens whole and (uncased)
// lower-cases. ASCII bytes go through a 128-entry table; only words that contain a character
// changed by NFD / lower-casing go through utf8proc. Scratch buffers are per thread, so the
// steady state allocates nothing.
#include <array>

#include "bert/text/tokenizer.h"
#include "char_class.h"
#include "utf8.h"

namespace bert::text {

namespace {

struct Scratch {
  std::string word, piece;
  std::vector<int32_t> cps;
};
thread_local Scratch tls;

const std::array<uint8_t, 128>& ascii_classes() {
  static const std::array<uint8_t, 128> t = [] {
    std::array<uint8_t, 128> a{};
    for (char32_t c = 0; c < 128; ++c) a[c] = char_class(c) & kKindMask;
    return a;
  }();
  return t;
}

size_t count_chars(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += !utf8_is_continuation_byte(c);
  return n;
}

}  // namespace

BasicTokenizer::BasicTokenizer(bool lower_case, std::vector<std::string> never_split)
    : lower_case_(lower_case), never_split_(std::move(never_split)) {
  for (const auto& t : never_split_)
    if (!t.empty()) starts_never_split_[static_cast<unsigned char>(t[0])] = true;
}

std::vector<std::string> BasicTokenizer::tokenize(std::string_view text, TokenizerStats* stats) const {
  std::vector<std::string> out;
  for_each_word(
      text, stats, [](void* ctx, const Word& w) { static_cast<std::vector<std::string>*>(ctx)->emplace_back(w.text); },
      &out);
  return out;
}

void BasicTokenizer::for_each_word(std::string_view text, TokenizerStats* stats, WordFn fn, void* ctx) const {
  const auto& ascii = ascii_classes();
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const bool lower = lower_case_;
  const auto& starts_special = starts_never_split_;

  Scratch& sc = tls;
  std::string& w = sc.word;
  w.clear();
  size_t wchars = 0;
  bool wnorm = false;  // the word has a character that uncased normalization changes
  uint64_t bad = 0;

  auto emit_normalized = [&]() {
    // NFD, drop non-spacing marks, lower-case, then split again on punctuation/whitespace:
    // normalization can produce punctuation (U+037E -> ';', U+1FEF -> '`').
    nfd(w, sc.cps);
    std::string& p = sc.piece;
    p.clear();
    size_t pchars = 0;
    auto flush_piece = [&]() {
      if (!p.empty()) fn(ctx, Word{p, pchars, -1});
      p.clear();
      pchars = 0;
    };
    for (int32_t c : sc.cps) {
      char32_t cp = static_cast<char32_t>(c);
      if (is_nonspacing_mark(cp)) continue;
      cp = to_lower(cp);
      uint8_t kind = char_class(cp) & kKindMask;
      if (kind == kPunct) {
        flush_piece();
        utf8_append(p, cp);
        pchars = 1;
        flush_piece();
      } else if (kind == kSpace) {
        flush_piece();
      } else {
        utf8_append(p, cp);
        ++pchars;
      }
    }
    flush_piece();
  };
  auto flush = [&]() {
    if (w.empty()) return;
    if (wnorm)
      emit_normalized();
    else
      fn(ctx, Word{w, wchars, -1});
    w.clear();
    wchars = 0;
    wnorm = false;
  };
  auto emit_single = [&](size_t i, size_t len) {
    flush();
    fn(ctx, Word{text.substr(i, len), 1, -1});
  };

  size_t i = 0;
  while (i < n) {
    unsigned char b = s[i];
    if (starts_special[b]) {
      int best = -1;
      size_t best_len = 0;
      for (size_t k = 0; k < never_split_.size(); ++k) {
        const std::string& t = never_split_[k];
        if (!t.empty() && t.size() > best_len && t.size() <= n - i && text.compare(i, t.size(), t) == 0) {
          best = static_cast<int>(k);
          best_len = t.size();
        }
      }
      if (best >= 0) {
        flush();
        fn(ctx, Word{never_split_[static_cast<size_t>(best)], count_chars(never_split_[static_cast<size_t>(best)]), best});
        i += best_len;
        continue;
      }
    }
    if (b < 0x80) {
      uint8_t kind = ascii[b];
      if (kind == kWordChar) {
        w.push_back(static_cast<char>(lower && b >= 'A' && b <= 'Z' ? b + 32 : b));
        ++wchars;
      } else if (kind == kSpace) {
        flush();
      } else if (kind == kPunct) {
        emit_single(i, 1);
      }  // kDrop: skipped, the word goes on
      ++i;
      continue;
    }
    char32_t cp;
    size_t len = utf8_decode(s, i, n, cp);
    if (len == 0) {  // invalid UTF-8: skip the byte, as the references do
      ++bad;
      ++i;
      continue;
    }
    uint8_t c = char_class(cp);
    uint8_t kind = c & kKindMask;
    bool norm = lower && (c & kNeedsNorm);
    switch (kind) {
      case kDrop:
        break;
      case kSpace:
        flush();
        break;
      case kPunct:
      case kCjk:
        if (norm) {  // its normalized form is split off after normalization
          if (kind == kCjk) flush();
          w.append(text.data() + i, len);
          ++wchars;
          wnorm = true;
          if (kind == kCjk) flush();
        } else {
          emit_single(i, len);
        }
        break;
      default:
        w.append(text.data() + i, len);
        ++wchars;
        wnorm |= norm;
        break;
    }
    i += len;
  }
  flush();
  if (stats) stats->invalid_utf8_bytes += bad;
}

}  // namespace bert::text
