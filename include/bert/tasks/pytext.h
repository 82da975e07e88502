#pragma once
// Python string semantics the reference scripts rely on, for exact parity: UTF-8 <-> code points
// (Python indexes strings by code point, SQuAD's answer_start counts code points), str.split()
// whitespace, str.lower(), the \w class of Python 3 regular expressions, and float repr /
// json.dumps formatting.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace bert::tasks {

using U32String = std::u32string;

// Decode UTF-8 (invalid bytes become U+FFFD, as Python's errors="replace").
U32String utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
std::string utf8_encode(char32_t c);

// Characters Python's str.split() / str.isspace() treat as whitespace.
bool py_isspace(char32_t c);
// Characters matched by \w in a Python 3 str regex (letters, digits, numerics, underscore).
bool py_isword(char32_t c);
// str.lower() (simple case mapping of each code point).
U32String py_lower(std::u32string_view s);
// str.split() with no argument.
std::vector<U32String> py_split(std::u32string_view s);
std::vector<std::string> py_split(std::string_view s);

// repr(float): shortest round-trip digits, fixed notation for 1e-5 < |x| < 1e16, "1e-05" otherwise.
std::string py_float_repr(double v);
// json.dumps(obj) (indent < 0: separators ", " and ": ") or json.dumps(obj, indent=n); floats as
// repr, non-ASCII escaped as \uXXXX (ensure_ascii), key order kept.
std::string py_json_dumps(const nlohmann::ordered_json& obj, int indent = -1);

}  // namespace bert::tasks
