// Python string semantics for exact parity with the reference scripts (see pytext.h).
#include "bert/tasks/pytext.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace bert::tasks {

U32String utf8_decode(std::string_view s) {
  U32String out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {  // invalid byte: replace it and move on by one byte
      out.push_back(U'\uFFFD');
      ++p;
      --left;
      continue;
    }
    out.push_back(static_cast<char32_t>(cp));
    p += n;
    left -= n;
  }
  return out;
}

std::string utf8_encode(char32_t c) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
  return std::string(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c < 0x80)
      out.push_back(static_cast<char>(c));
    else
      out += utf8_encode(c);
  }
  return out;
}

bool py_isspace(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool py_isword(char32_t c) {
  if (c < 0x80)
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

U32String py_lower(std::u32string_view s) {
  U32String out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c < 0x80)
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    else if (c == 0x130)  // İ lowers to i + combining dot above in Python
      out += U"i\u0307";
    else
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
  }
  return out;
}

std::vector<U32String> py_split(std::u32string_view s) {
  std::vector<U32String> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && py_isspace(s[i])) ++i;
    size_t b = i;
    while (i < s.size() && !py_isspace(s[i])) ++i;
    if (i > b) out.emplace_back(s.substr(b, i - b));
  }
  return out;
}

std::vector<std::string> py_split(std::string_view s) {
  std::vector<std::string> out;
  for (const auto& w : py_split(utf8_decode(s))) out.push_back(utf8_encode(w));
  return out;
}

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-d.ddde+XX"
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t epos = sci.find('e');
  std::string digits = sci.substr(0, epos);
  int exp10 = std::stoi(sci.substr(epos + 1));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  std::string out = neg ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    int e = decpt - 1;
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    out += eb;
  }
  return out;
}

static void dump_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default: {
        char buf[16];
        if (c < 0x20 || (c >= 0x7F && c < 0x10000)) {
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else if (c >= 0x10000) {
          unsigned v = static_cast<unsigned>(c) - 0x10000;
          std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
      }
    }
  }
  out.push_back('"');
}

static void dump_value(std::string& out, const nlohmann::ordered_json& j, int indent, int level) {
  auto newline = [&](int lvl) {
    out.push_back('\n');
    out.append(static_cast<size_t>(indent * lvl), ' ');
  };
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::object: {
      if (j.empty()) { out += "{}"; return; }
      out.push_back('{');
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out += indent >= 0 ? "," : ", ";
        first = false;
        if (indent >= 0) newline(level + 1);
        dump_string(out, it.key());
        out += ": ";
        dump_value(out, it.value(), indent, level + 1);
      }
      if (indent >= 0) newline(level);
      out.push_back('}');
      return;
    }
    case nlohmann::ordered_json::value_t::array: {
      if (j.empty()) { out += "[]"; return; }
      out.push_back('[');
      bool first = true;
      for (const auto& v : j) {
        if (!first) out += indent >= 0 ? "," : ", ";
        first = false;
        if (indent >= 0) newline(level + 1);
        dump_value(out, v, indent, level + 1);
      }
      if (indent >= 0) newline(level);
      out.push_back(']');
      return;
    }
    case nlohmann::ordered_json::value_t::string:
      dump_string(out, j.get_ref<const std::string&>());
      return;
    case nlohmann::ordered_json::value_t::number_float:
      out += py_float_repr(j.get<double>());
      return;
    default:
      out += j.dump();
  }
}

std::string py_json_dumps(const nlohmann::ordered_json& obj, int indent) {
  std::string out;
  dump_value(out, obj, indent, 0);
  return out;
}

}  // namespace bert::tasks
