#pragma once
// Private: how the BERT tokenizer treats each code point, with HF's BertNormalizer /
// BertPreTokenizer semantics. Unicode data comes from utf8proc.
//   drop  : NUL, U+FFFD and "other" characters (Cc Cf Co Cs Cn) except \t \n \r
//   space : \t \n \r and the White_Space characters (split words, then removed)
//   punct : ASCII 33-47 58-64 91-96 123-126 and Unicode P* (each becomes its own word)
//   cjk   : CJK ideograph blocks (each becomes its own word)
//   word  : everything else
// kNeedsNorm marks characters changed by uncased normalization (NFD, drop Mn, lower-case).
#include <cstdint>
#include <string>
#include <vector>

namespace bert::text {

enum : uint8_t { kWordChar = 0, kDrop = 1, kSpace = 2, kPunct = 3, kCjk = 4 };
inline constexpr uint8_t kKindMask = 7;
inline constexpr uint8_t kNeedsNorm = 8;

uint8_t char_class(char32_t cp);
bool is_nonspacing_mark(char32_t cp);
char32_t to_lower(char32_t cp);
// Canonical decomposition (NFD, with canonical ordering) of the UTF-8 in `word` into `out`.
void nfd(std::string_view word, std::vector<int32_t>& out);

}  // namespace bert::text
