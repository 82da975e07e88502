// Code point classes for the BERT tokenizer (see char_class.h), from utf8proc's Unicode tables.
// Classes of the Basic Multilingual Plane are computed once into a 64 KiB table.
#include "char_class.h"

#include <utf8proc.h>

#include <array>

#include "bert/common/error.h"

namespace bert::text {

static bool is_cjk(char32_t cp) {
  // The CJK ideograph blocks of Google's tokenization.py, with HF's Rust upper block starting
  // at U+2B920 (tokenizers' BertNormalizer) instead of U+2B820; see docs/tokenizer.md.
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

static bool is_white_space(char32_t cp) {
  // Unicode White_Space (what Rust's char::is_whitespace tests)
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

static uint8_t compute_class(char32_t cp) {
  if (cp == 0 || cp == 0xFFFD) return kDrop;
  if (cp == '\t' || cp == '\n' || cp == '\r') return kSpace;
  utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  switch (cat) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CS:
      return kDrop;
    default:
      break;
  }
  if (is_white_space(cp)) return kSpace;
  uint8_t kind = kWordChar;
  if (is_cjk(cp)) {
    kind = kCjk;
  } else if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    kind = kPunct;
  } else {
    switch (cat) {
      case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
      case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO:
        kind = kPunct;
        break;
      default:
        break;
    }
  }
  bool norm = cat == UTF8PROC_CATEGORY_MN || utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)) != static_cast<utf8proc_int32_t>(cp);
  if (!norm) {
    utf8proc_int32_t buf[8];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 8, UTF8PROC_DECOMPOSE, &last);
    norm = n != 1 || buf[0] != static_cast<utf8proc_int32_t>(cp);
  }
  return static_cast<uint8_t>(kind | (norm ? kNeedsNorm : 0));
}

uint8_t char_class(char32_t cp) {
  static const std::array<uint8_t, 0x10000> bmp = [] {
    std::array<uint8_t, 0x10000> t{};
    for (char32_t c = 0; c < 0x10000; ++c) t[c] = compute_class(c);
    return t;
  }();
  if (cp < 0x10000) return bmp[cp];
  if (cp > 0x10FFFF) return kDrop;
  return compute_class(cp);
}

bool is_nonspacing_mark(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_MN;
}

char32_t to_lower(char32_t cp) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

void nfd(std::string_view word, std::vector<int32_t>& out) {
  if (out.size() < word.size() * 2 + 8) out.resize(word.size() * 2 + 8);
  for (;;) {
    utf8proc_ssize_t n = utf8proc_decompose(reinterpret_cast<const utf8proc_uint8_t*>(word.data()),
                                            static_cast<utf8proc_ssize_t>(word.size()), out.data(),
                                            static_cast<utf8proc_ssize_t>(out.size()), UTF8PROC_DECOMPOSE);
    if (n < 0) throw RuntimeError(std::string("utf8proc: ") + utf8proc_errmsg(n));
    if (static_cast<size_t>(n) <= out.size()) {
      out.resize(static_cast<size_t>(n));
      return;
    }
    out.resize(static_cast<size_t>(n));
  }
}

}  // namespace bert::text
