// SQuAD reading and feature creation on hand-made contexts: code-point word offsets (unicode),
// answers that do not match their offset, windows, max-context flags, the improved answer span,
// answers at window edges, and the v1.1 / v2.0 out-of-window rules.
#include <gtest/gtest.h>

#include "bert/common/error.h"
#include "bert/tasks/squad.h"
#include "bert/tasks/squad_features.h"
#include "tasks_test_helpers.h"
#include "test_util.h"

using namespace bert;
using namespace bert::tasks;
using bert::test::SmallTokenizer;

TEST(TasksSquadFeatures, SplitContextCountsCodePoints) {
  std::vector<std::string> words;
  std::vector<int64_t> offsets;
  squad_split_context("  Hello  w\u00f6rld\tx\u202fy", words, offsets);
  EXPECT_EQ(words, (std::vector<std::string>{"Hello", "w\u00f6rld", "x", "y"}));
  std::vector<int64_t> want = {-1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 3};
  EXPECT_EQ(offsets, want);
}

static const char* kSquad = R"({"version": "1.1", "data": [{"title": "t", "paragraphs": [
  {"context": "John Smith was born in Caf\u00e9 Paris in 1990.",
   "qas": [
     {"id": "q1", "question": "Where was John born?", "answers": [{"text": "Caf\u00e9 Paris", "answer_start": 23}]},
     {"id": "q2", "question": "When?", "answers": [{"text": "1990", "answer_start": 37}]},
     {"id": "q3", "question": "Who?", "answers": [{"text": "Mary", "answer_start": 0}]},
     {"id": "q4", "question": "Who?", "answers": [{"text": "John", "answer_start": 400}]}
   ]}]}]})";

TEST(TasksSquadFeatures, ReaderMapsAnswersAndSkipsMismatches) {
  test::TempDir dir;
  test::write_text(dir / "train.json", kSquad);
  SquadReadOptions opts;
  opts.is_training = true;
  SquadReadStats stats;
  auto ex = read_squad_examples(dir / "train.json", opts, &stats);
  EXPECT_EQ(stats.questions, 4);
  EXPECT_EQ(stats.skipped_bad_answer, 2);  // q3: text not at offset; q4: offset past the context
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].qas_id, "q1");
  EXPECT_EQ(ex[0].start_position, 5);  // offsets count code points: é is one character
  EXPECT_EQ(ex[0].end_position, 6);
  EXPECT_EQ(ex[1].start_position, 8);  // "1990." holds "1990"
  EXPECT_EQ(ex[1].end_position, 8);

  auto dev = read_squad_examples(dir / "train.json", SquadReadOptions{});
  EXPECT_EQ(dev.size(), 4u);  // evaluation keeps every question
  EXPECT_EQ(dev[2].answers[0].text, "Mary");
}

TEST(TasksSquadFeatures, ReaderNamesTheFileOnBadInput) {
  test::TempDir dir;
  test::write_text(dir / "bad.json", "{\"version\": \"1.1\", \"data\": [\n{\"title\": }");
  try {
    read_squad_examples(dir / "bad.json", SquadReadOptions{});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  test::write_text(dir / "nodata.json", "{\"version\": \"1.1\"}");
  EXPECT_THROW(read_squad_examples(dir / "nodata.json", SquadReadOptions{}), UserError);
  EXPECT_THROW(read_squad_examples(dir / "missing.json", SquadReadOptions{}), UserError);
}

TEST(TasksSquadFeatures, V2ImpossibleQuestions) {
  test::TempDir dir;
  test::write_text(dir / "v2.json", R"({"version": "v2.0", "data": [{"paragraphs": [{"context": "a b c",
    "qas": [{"id": "n1", "question": "q", "answers": [], "is_impossible": true},
            {"id": "y1", "question": "q", "answers": [{"text": "b", "answer_start": 2}], "is_impossible": false}]}]}]})");
  SquadReadOptions opts;
  opts.is_training = true;
  opts.version_2 = true;
  auto ex = read_squad_examples(dir / "v2.json", opts);
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_TRUE(ex[0].is_impossible);
  EXPECT_EQ(ex[0].start_position, -1);
  EXPECT_FALSE(ex[1].is_impossible);
  EXPECT_EQ(ex[1].start_position, 1);
}

TEST(TasksSquadFeatures, DocSpansAndMaxContext) {
  auto spans = make_doc_spans(10, 4, 2);
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].start, 0);
  EXPECT_EQ(spans[1].start, 2);
  EXPECT_EQ(spans[2].start, 4);
  EXPECT_EQ(spans[3].start, 6);
  EXPECT_EQ(spans[3].length, 4);
  EXPECT_EQ(make_doc_spans(3, 4, 2).size(), 1u);
  // position 3: span 0 gives min(3,0)=0, span 1 gives min(1,2)=1 -> span 1
  EXPECT_FALSE(check_is_max_context(spans, 0, 3));
  EXPECT_TRUE(check_is_max_context(spans, 1, 3));
  EXPECT_TRUE(check_is_max_context(spans, 2, 5));
  EXPECT_TRUE(check_is_max_context(spans, 0, 0));
  EXPECT_TRUE(check_is_max_context(spans, 3, 9));
}

static SquadExample letters_example(int64_t start_word, int64_t end_word, const std::string& answer) {
  SquadExample ex;
  ex.qas_id = "x";
  ex.question_text = "q";
  ex.context = "a b c d e f g h i j";
  ex.doc_tokens = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
  ex.start_position = start_word;
  ex.end_position = end_word;
  ex.orig_answer_text = answer;
  return ex;
}

TEST(TasksSquadFeatures, WindowsTokensAndMaps) {
  SmallTokenizer t({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "q"});
  SquadFeatureOptions opts;
  opts.max_seq_length = 10;
    opts.max_query_length = 2;  // 1 query token -> 6 document tokens per window
  opts.doc_stride = 3;
  auto feats = convert_squad_examples({letters_example(-1, -1, "")}, t.tok, opts);
  ASSERT_EQ(feats.size(), 3u);  // windows [0..5], [3..8], [6..9]
  EXPECT_EQ(feats[0].tokens, (std::vector<std::string>{"[CLS]", "q", "[SEP]", "a", "b", "c", "d", "e", "f", "[SEP]"}));
  EXPECT_EQ(feats[0].unique_id, 1000000000);
  EXPECT_EQ(feats[1].unique_id, 1000000001);
  EXPECT_EQ(feats[1].tokens[3], "d");
  EXPECT_EQ(feats[1].token_to_orig_map, (std::vector<int64_t>{-1, -1, -1, 3, 4, 5, 6, 7, 8, -1}));
  EXPECT_EQ(feats[2].tokens.size(), 8u);
  EXPECT_EQ(feats[0].segment_ids, (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(feats[0].input_ids[0], t.full->vocab().cls_id());
  EXPECT_EQ(feats[0].input_ids[2], t.full->vocab().sep_id());
  EXPECT_EQ(feats[0].input_ids[3], t.full->vocab().id("a"));
  // a "d" (word 3) in window 0 has left 3 / right 2 context; in window 1 (start 3) only 0 left
  EXPECT_EQ(feats[0].token_is_max_context[6], 1);
  EXPECT_EQ(feats[1].token_is_max_context[3], 0);
}

TEST(TasksSquadFeatures, PaddingAndMask) {
  SmallTokenizer t({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "q"});
  SquadFeatureOptions opts;
  opts.max_seq_length = 20;
    opts.max_query_length = 2;
  auto f = convert_squad_examples({letters_example(-1, -1, "")}, t.tok, opts);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].tokens.size(), 14u);
  EXPECT_EQ(f[0].input_ids.size(), 20u);
  EXPECT_EQ(f[0].input_mask[13], 1);
  EXPECT_EQ(f[0].input_mask[14], 0);
  EXPECT_EQ(f[0].input_ids[19], t.full->vocab().pad_id());
  EXPECT_EQ(f[0].segment_ids[19], 0);
  EXPECT_EQ(f[0].token_to_orig_map[3], 0);
  EXPECT_EQ(f[0].token_to_orig_map[12], 9);
  EXPECT_EQ(f[0].token_to_orig_map[13], -1);
}

TEST(TasksSquadFeatures, TrainingTargetsAtWindowEdgesAndOutOfWindow) {
  SmallTokenizer t({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "q"});
  SquadFeatureOptions opts;
  opts.max_seq_length = 8;
    opts.max_query_length = 2;  // 4 document tokens per window, stride 2: [0-3] [2-5] [4-7] [6-9]
  opts.doc_stride = 2;
  opts.is_training = true;

  // "c d" sits at the end of window 0 and the start of window 1.
  auto edge = convert_squad_examples({letters_example(2, 3, "c d")}, t.tok, opts);
  ASSERT_EQ(edge.size(), 2u);  // v1.1: windows 2 and 3 do not hold the answer and are dropped
  EXPECT_EQ(edge[0].doc_span_index, 0);
  EXPECT_EQ(edge[0].start_position, 5);
  EXPECT_EQ(edge[0].end_position, 6);
  EXPECT_EQ(edge[1].doc_span_index, 1);
  EXPECT_EQ(edge[1].start_position, 3);
  EXPECT_EQ(edge[1].end_position, 4);

  SquadFeatureStats stats;
  auto last = convert_squad_examples({letters_example(8, 9, "i j")}, t.tok, opts, &stats);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(stats.dropped_out_of_span, 3);
  EXPECT_EQ(last[0].tokens[last[0].start_position], "i");
  EXPECT_EQ(last[0].tokens[last[0].end_position], "j");

  opts.version_2 = true;  // v2.0: windows without the answer train on [CLS]
  auto v2 = convert_squad_examples({letters_example(8, 9, "i j")}, t.tok, opts);
  ASSERT_EQ(v2.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(v2[i].start_position, 0);
    EXPECT_EQ(v2[i].end_position, 0);
    EXPECT_TRUE(v2[i].is_impossible);
  }
  EXPECT_EQ(v2[3].start_position, 5);

  auto impossible = letters_example(-1, -1, "");
  impossible.is_impossible = true;
  auto imp = convert_squad_examples({impossible}, t.tok, opts);
  ASSERT_EQ(imp.size(), 4u);
  EXPECT_EQ(imp[3].start_position, 0);
}

TEST(TasksSquadFeatures, ImprovedAnswerSpanAndUnicode) {
  // "1990." is one word but two WordPieces; the answer "1990" maps to the first only.
  SmallTokenizer t({"john", "smith", "was", "born", "in", "cafe", "paris", "1990", ".", "when", "?", "where"});
  test::TempDir dir;
  test::write_text(dir / "train.json", kSquad);
  SquadReadOptions ropts;
  ropts.is_training = true;
  auto ex = read_squad_examples(dir / "train.json", ropts);
  SquadFeatureOptions opts;
  opts.max_seq_length = 32;
    opts.max_query_length = 2;
  opts.is_training = true;
  auto feats = convert_squad_examples(ex, t.tok, opts);
  ASSERT_EQ(feats.size(), 2u);
  // q1 "Café Paris": accents stripped by the uncased tokenizer, span = cafe paris
  EXPECT_EQ(feats[0].tokens[feats[0].start_position], "cafe");
  EXPECT_EQ(feats[0].tokens[feats[0].end_position], "paris");
  EXPECT_EQ(feats[1].tokens[feats[1].start_position], "1990");
  EXPECT_EQ(feats[1].end_position, feats[1].start_position);  // the trailing "." is left out
  std::vector<std::string> doc = {"1990", "."};
  EXPECT_EQ(improve_answer_span(doc, 0, 1, t.tok, "1990"), (std::pair<int64_t, int64_t>{0, 0}));
  EXPECT_EQ(improve_answer_span(doc, 0, 1, t.tok, "nothing"), (std::pair<int64_t, int64_t>{0, 1}));
}

TEST(TasksSquadFeatures, BadOptionsAreUserErrors) {
  SmallTokenizer t({"a", "q"});
  SquadFeatureOptions opts;
  opts.max_seq_length = 10;
    opts.max_query_length = 2;
  opts.max_query_length = 8;
  EXPECT_THROW(convert_squad_examples({letters_example(-1, -1, "")}, t.tok, opts), UserError);
  opts.max_query_length = 2;
  opts.doc_stride = 0;
  EXPECT_THROW(convert_squad_examples({letters_example(-1, -1, "")}, t.tok, opts), UserError);
}
