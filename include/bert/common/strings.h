#pragma once
// Small string helpers shared by the whole tree.
#include <string>
#include <string_view>
#include <vector>

namespace bert {

// Edit distance (adjacent transpositions count as one edit); used to suggest the closest valid name.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word`, or "" if none is reasonably close.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

std::vector<std::string> split(std::string_view s, char sep);
std::string trim(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string to_lower_ascii(std::string_view s);

// "1.23 G", "456.7 k" ...
std::string human_count(double v);
// "1h02m03s", "4m05s", "12.3s"
std::string human_duration(double seconds);

}  // namespace bert
