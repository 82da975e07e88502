// The rule-based sentence splitter and wikitext helpers used by --input-format paragraphs.
#include "bert/data/sentence_split.h"
#include "test_util.h"

using namespace bert::data;
using V = std::vector<std::string>;

TEST(DataSentenceSplit, SplitsOnTerminatorsBeforeCapitals) {
  EXPECT_EQ(split_sentences("It rained. Then it stopped! Did it? Yes."),
            (V{"It rained.", "Then it stopped!", "Did it?", "Yes."}));
  EXPECT_EQ(split_sentences("He said \"go.\" She went."), (V{"He said \"go.\"", "She went."}));
  EXPECT_EQ(split_sentences("Wait... What?! Fine."), (V{"Wait...", "What?!", "Fine."}));
  EXPECT_EQ(split_sentences("In 1990. 12 people came."), (V{"In 1990.", "12 people came."}));
}

TEST(DataSentenceSplit, KeepsAbbreviationsInitialsAndLowercaseContinuations) {
  EXPECT_EQ(split_sentences("Mr. Smith met Dr. Jones at St. Paul."), (V{"Mr. Smith met Dr. Jones at St. Paul."}));
  EXPECT_EQ(split_sentences("J. R. R. Tolkien wrote it."), (V{"J. R. R. Tolkien wrote it."}));
  EXPECT_EQ(split_sentences("The U.S. Army won. It was late."), (V{"The U.S. Army won.", "It was late."}));
  EXPECT_EQ(split_sentences("version 2.5 is out. ok then."), (V{"version 2.5 is out. ok then."}));
  EXPECT_EQ(split_sentences("e.g. This stays."), (V{"e.g. This stays."}));
}

TEST(DataSentenceSplit, HandlesWikitextSpacing) {
  EXPECT_EQ(split_sentences(" The lobster is blue . It is related to H. americanus . It grows . "),
            (V{"The lobster is blue .", "It is related to H. americanus .", "It grows ."}));
  EXPECT_TRUE(split_sentences("   ").empty());
}

TEST(DataSentenceSplit, WikitextHeadingsAndEscapes) {
  EXPECT_TRUE(is_wikitext_title(" = Homarus gammarus = "));
  EXPECT_FALSE(is_wikitext_title(" = = Description = = "));
  EXPECT_TRUE(is_wikitext_heading(" = = Description = = "));
  EXPECT_TRUE(is_wikitext_heading(" = = = Deep = = = "));
  EXPECT_FALSE(is_wikitext_heading(" a = b = c "));
  EXPECT_FALSE(is_wikitext_heading(" = = "));
  EXPECT_EQ(unescape_wikitext("weigh 0 @.@ 7 kg , 1 @,@ 000 long @-@ term"), "weigh 0.7 kg , 1,000 long-term");
}
