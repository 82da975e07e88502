#pragma once
// A rule-based sentence splitter for `prepare --input-format paragraphs` (one paragraph per line).
// A sentence ends at '.', '!' or '?' (runs such as "?!" or "..." included), optionally followed by
// closing quotes or brackets, when whitespace follows and the next word starts with an upper-case
// letter, a digit, or an opening quote/bracket. A '.' does not end a sentence after a known
// abbreviation (Mr, Dr, e.g, etc, ...), a single letter ("J. Smith"), or a word that already has
// an inner period ("U.S."). Works on wikitext's spaced punctuation ("word . Next") as well.
#include <string>
#include <string_view>
#include <vector>

namespace bert::data {

std::vector<std::string> split_sentences(std::string_view paragraph);

// wikitext markup helpers: " = Title = " (one '=' each side) is a top-level heading;
// " = = Section = = " and deeper are section headings.
bool is_wikitext_title(std::string_view line);
bool is_wikitext_heading(std::string_view line);  // any level
// Undo wikitext's number escapes: " @-@ " -> "-", " @,@ " -> ",", " @.@ " -> ".".
std::string unescape_wikitext(std::string_view line);

}  // namespace bert::data
