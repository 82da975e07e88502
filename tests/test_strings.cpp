#include "bert/common/strings.h"

#include <gtest/gtest.h>

using namespace bert;

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
  EXPECT_EQ(edit_distance("cdua", "cuda"), 1u);
}

TEST(Strings, ClosestMatch) {
  std::vector<std::string> keys = {"hidden_size", "num_hidden_layers", "vocab_size"};
  EXPECT_EQ(closest_match("hiden_size", keys), "hidden_size");
  EXPECT_EQ(closest_match("vocabsize", keys), "vocab_size");
  EXPECT_EQ(closest_match("zzzzzzzzzzzzzzzzzzzzzz", keys), "");
}

TEST(Strings, SplitTrimJoin) {
  EXPECT_EQ(split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(trim("  x y \n"), "x y");
  EXPECT_EQ(join({"a", "b"}, "-"), "a-b");
}

TEST(Strings, HumanUnits) {
  EXPECT_EQ(human_count(1500), "1.50 k");
  EXPECT_EQ(human_duration(65), "1m05s");
}
