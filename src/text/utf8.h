#pragma once
// Private helpers of the text component: strict UTF-8 decoding (invalid bytes are reported so
// callers can skip and count them), UTF-8 encoding, and the byte hash of the vocab index.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace bert::text {

// Decodes the code point at s[i] (i < n). Returns its byte length, or 0 when the byte at s[i]
// does not start a well-formed sequence (overlong, surrogate, > U+10FFFF, truncated, stray
// continuation byte); the caller then skips that one byte.
inline size_t utf8_decode(const unsigned char* s, size_t i, size_t n, char32_t& cp) {
  unsigned char b0 = s[i];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  auto cont = [&](size_t k, unsigned char lo, unsigned char hi) {
    return i + k < n && s[i + k] >= lo && s[i + k] <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (!cont(1, 0x80, 0xBF)) return 0;
    cp = (char32_t(b0 & 0x1F) << 6) | (s[i + 1] & 0x3F);
    return 2;
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    unsigned char lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2, 0x80, 0xBF)) return 0;
    cp = (char32_t(b0 & 0x0F) << 12) | (char32_t(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    unsigned char lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2, 0x80, 0xBF) || !cont(3, 0x80, 0xBF)) return 0;
    cp = (char32_t(b0 & 0x07) << 18) | (char32_t(s[i + 1] & 0x3F) << 12) | (char32_t(s[i + 2] & 0x3F) << 6) |
         (s[i + 3] & 0x3F);
    return 4;
  }
  return 0;
}

inline void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

inline size_t utf8_invalid_bytes(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t bad = 0;
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    size_t len = utf8_decode(p, i, s.size(), cp);
    if (len == 0) {
      ++bad;
      len = 1;
    }
    i += len;
  }
  return bad;
}

inline bool utf8_is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Fast hash for short keys (8 bytes at a time).
inline uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xFF51AFD7ED558CCDULL);
  auto mix = [](uint64_t x) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return x;
  };
  while (n >= 8) {
    uint64_t k;
    std::memcpy(&k, p, 8);
    h = mix(h ^ k) * 0x94D049BB133111EBULL;
    p += 8;
    n -= 8;
  }
  if (n) {
    uint64_t k = 0;
    std::memcpy(&k, p, n);
    h = mix(h ^ k) * 0x94D049BB133111EBULL;
  }
  return mix(h);
}

}  // namespace bert::text
