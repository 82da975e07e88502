// Rule-based sentence splitting and wikitext heading detection for paragraph-format corpora.
#include "bert/data/sentence_split.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "bert/common/strings.h"

namespace bert::data {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }
bool is_closer(char c) { return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}'; }
bool is_opener(char c) { return c == '"' || c == '\'' || c == '(' || c == '[' || c == '{'; }

// Lower-case abbreviations (without the final period) after which '.' is not a sentence end.
bool is_abbreviation(std::string_view w) {
  static const std::array<std::string_view, 44> kAbbrev = {
      "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "vs", "etc", "e.g", "i.e", "cf",
      "al", "no", "nos", "vol", "vols", "fig", "figs", "approx", "dept", "est", "inc", "ltd", "co", "corp",
      "gen", "col", "lt", "sgt", "capt", "rev", "hon", "gov", "sen", "rep", "jan", "feb", "aug", "sept", "oct"};
  std::string lw = to_lower_ascii(w);
  return std::find(kAbbrev.begin(), kAbbrev.end(), lw) != kAbbrev.end();
}

// Does the next word (starting at s[j]) look like the start of a sentence?
bool starts_sentence(std::string_view s, size_t j) {
  if (j >= s.size()) return false;
  unsigned char c = static_cast<unsigned char>(s[j]);
  if (std::isupper(c) || std::isdigit(c) || is_opener(s[j])) return true;
  return c >= 0x80;  // non-ASCII letters (case unknown without Unicode tables): allow a split
}

}  // namespace

std::vector<std::string> split_sentences(std::string_view p) {
  std::vector<std::string> out;
  size_t start = 0;
  const size_t n = p.size();
  for (size_t i = 0; i < n; ++i) {
    char c = p[i];
    if (c != '.' && c != '!' && c != '?') continue;
    size_t k = i;
    while (k + 1 < n && (p[k + 1] == '.' || p[k + 1] == '!' || p[k + 1] == '?')) ++k;
    size_t end = k + 1;
    while (end < n && is_closer(p[end])) ++end;
    if (end >= n || !is_space(p[end])) {
      i = k;
      continue;
    }
    size_t j = end;
    while (j < n && is_space(p[j])) ++j;
    if (!starts_sentence(p, j)) {
      i = k;
      continue;
    }
    if (c == '.' && k == i) {
      // The word before the period: letters/periods back to the previous space.
      size_t w = i;
      while (w > start && !is_space(p[w - 1])) --w;
      std::string_view word = p.substr(w, i - w);
      bool single_letter = word.size() == 1 && std::isalpha(static_cast<unsigned char>(word[0]));
      bool inner_period = word.find('.') != std::string_view::npos;
      if (!word.empty() && (single_letter || inner_period || is_abbreviation(word))) {
        i = k;
        continue;
      }
    }
    std::string sent = trim(p.substr(start, end - start));
    if (!sent.empty()) out.push_back(std::move(sent));
    start = j;
    i = j > 0 ? j - 1 : 0;
  }
  std::string last = trim(p.substr(std::min(start, n)));
  if (!last.empty()) out.push_back(std::move(last));
  return out;
}

static int heading_level(std::string_view line) {
  std::string t = trim(line);
  if (t.size() < 3 || t.front() != '=' || t.back() != '=') return 0;
  int lead = 0;
  size_t i = 0;
  while (i < t.size() && (t[i] == '=' || t[i] == ' ')) {
    if (t[i] == '=') ++lead;
    ++i;
  }
  int trail = 0;
  size_t j = t.size();
  while (j > i && (t[j - 1] == '=' || t[j - 1] == ' ')) {
    if (t[j - 1] == '=') ++trail;
    --j;
  }
  if (j <= i || lead != trail) return 0;
  return lead;
}

bool is_wikitext_title(std::string_view line) { return heading_level(line) == 1; }
bool is_wikitext_heading(std::string_view line) { return heading_level(line) >= 1; }

std::string unescape_wikitext(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == ' ' && i + 4 < line.size() + 0 && line[i + 1] == '@' && line[i + 3] == '@' && line[i + 4] == ' ' &&
        (line[i + 2] == '-' || line[i + 2] == ',' || line[i + 2] == '.')) {
      out.push_back(line[i + 2]);
      i += 4;
      continue;
    }
    out.push_back(line[i]);
  }
  return out;
}

}  // namespace bert::data
