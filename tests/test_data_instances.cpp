// Instance builder and masking on tiny fake vocabularies: structure of [CLS] A [SEP] B [SEP],
// masks only on real tokens and never on [CLS]/[SEP], mask share and 80/10/10 ratios,
// whole-word masking, random-next share, truncation, determinism of the RNG.
#include <map>
#include <set>

#include "bert/data/instances.h"
#include "bert/data/instances_rng.h"
#include "test_util.h"

using namespace bert::data;

namespace {

// ids: 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK], 5..99 words, 100..119 "##" pieces.
constexpr int32_t kCls = 2, kSep = 3, kMask = 4, kVocab = 120;

MaskingVocab fake_vocab() {
  MaskingVocab v;
  v.cls_id = kCls;
  v.sep_id = kSep;
  v.mask_id = kMask;
  v.vocab_size = kVocab;
  v.is_continuation.assign(kVocab, 0);
  for (int i = 100; i < kVocab; ++i) v.is_continuation[i] = 1;
  return v;
}

// Documents of random sentences; about a third of words have one or two ## pieces.
std::vector<Document> fake_corpus(int docs, int min_sent, int max_sent, int min_len, int max_len, uint64_t seed) {
  Rng rng(seed);
  std::vector<Document> out(docs);
  for (auto& d : out) {
    int ns = static_cast<int>(rng.randint(min_sent, max_sent));
    for (int s = 0; s < ns; ++s) {
      Sentence sent;
      int len = static_cast<int>(rng.randint(min_len, max_len));
      while (static_cast<int>(sent.size()) < len) {
        sent.push_back(static_cast<int32_t>(rng.randint(5, 99)));
        if (rng.uniform() < 0.33) {
          int pieces = static_cast<int>(rng.randint(1, 2));
          for (int k = 0; k < pieces; ++k) sent.push_back(static_cast<int32_t>(rng.randint(100, 119)));
        }
      }
      d.push_back(sent);
    }
  }
  return out;
}

std::vector<TrainingInstance> build(const std::vector<Document>& docs, const InstanceOptions& o, uint64_t seed,
                                    int dupe = 1) {
  Rng rng(seed);
  std::vector<TrainingInstance> out;
  MaskingVocab v = fake_vocab();
  for (int k = 0; k < dupe; ++k)
    for (size_t i = 0; i < docs.size(); ++i) create_instances_from_document(docs, i, o, v, rng, out);
  return out;
}

// The tokens before masking.
std::vector<int32_t> original(const TrainingInstance& inst) {
  std::vector<int32_t> t = inst.tokens;
  for (size_t k = 0; k < inst.lm.positions.size(); ++k) t[inst.lm.positions[k]] = inst.lm.labels[k];
  return t;
}

}  // namespace

TEST(DataRng, DeterministicAndInRange) {
  Rng a(42), b(42), c(43);
  EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(Rng(42).next(), c.next());
  EXPECT_NE(Rng::for_stream(1, 0).next(), Rng::for_stream(1, 1).next());
  EXPECT_EQ(Rng::for_stream(1, 7).next(), Rng::for_stream(1, 7).next());
  Rng r(7);
  std::map<int64_t, int> seen;
  for (int i = 0; i < 7000; ++i) {
    int64_t v = r.randint(2, 8);
    ASSERT_GE(v, 2);
    ASSERT_LE(v, 8);
    ++seen[v];
  }
  EXPECT_EQ(seen.size(), 7u);  // both ends inclusive
  for (auto& [v, n] : seen) EXPECT_NEAR(n, 1000, 150) << v;
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
  std::vector<int> v{1, 2, 3, 4, 5, 6};
  r.shuffle(v);
  std::multiset<int> ms(v.begin(), v.end());
  EXPECT_EQ(ms, (std::multiset<int>{1, 2, 3, 4, 5, 6}));
}

TEST(DataInstances, TruncateSeqPairKeepsBothSidesWithinLimit) {
  Rng rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> a(rng.randint(1, 80)), b(rng.randint(1, 80));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int32_t>(i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int32_t>(1000 + i);
    auto a0 = a, b0 = b;
    truncate_seq_pair(a, b, 61, rng);
    EXPECT_LE(a.size() + b.size(), std::max<size_t>(61, 0));
    EXPECT_GE(a.size(), 1u);
    EXPECT_GE(b.size(), 1u);
    // what is left is a contiguous run of the original
    if (!a.empty()) EXPECT_TRUE(std::search(a0.begin(), a0.end(), a.begin(), a.end()) != a0.end());
    if (!b.empty()) EXPECT_TRUE(std::search(b0.begin(), b0.end(), b.begin(), b.end()) != b0.end());
  }
}

TEST(DataInstances, StructureAndMasksOnlyOnRealTokens) {
  auto docs = fake_corpus(40, 1, 30, 3, 25, 1);
  InstanceOptions o;
  o.max_seq_length = 64;
  o.mask.max_predictions_per_seq = 10;
  auto inst = build(docs, o, 11, 2);
  ASSERT_GT(inst.size(), 100u);
  for (const auto& in : inst) {
    const auto& t = in.tokens;
    ASSERT_LE(static_cast<int64_t>(t.size()), o.max_seq_length);
    ASSERT_GE(in.len_a, 1);
    const size_t sep1 = static_cast<size_t>(in.len_a) + 1;
    ASSERT_LT(sep1 + 1, t.size() - 1);  // B non-empty
    EXPECT_EQ(t.front(), kCls);
    EXPECT_EQ(t[sep1], kSep);
    EXPECT_EQ(t.back(), kSep);
    auto orig = original(in);
    for (size_t i = 1; i + 1 < orig.size(); ++i)
      if (i != sep1) EXPECT_GE(orig[i], 5) << "special token inside a segment";
    ASSERT_EQ(in.lm.positions.size(), in.lm.labels.size());
    ASSERT_GE(in.lm.positions.size(), 1u);
    ASSERT_LE(static_cast<int64_t>(in.lm.positions.size()), o.mask.max_predictions_per_seq);
    for (size_t k = 0; k < in.lm.positions.size(); ++k) {
      int32_t p = in.lm.positions[k];
      EXPECT_GT(p, 0);
      EXPECT_NE(static_cast<size_t>(p), sep1);
      EXPECT_LT(static_cast<size_t>(p), t.size() - 1);
      if (k > 0) EXPECT_GT(p, in.lm.positions[k - 1]);  // sorted, unique
      EXPECT_NE(in.lm.labels[k], kCls);
      EXPECT_NE(in.lm.labels[k], kSep);
    }
    // Google's count: min(max_predictions, max(1, round(len * prob))), reached for long enough text.
    int64_t want = std::min<int64_t>(10, std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(t.size() * 0.15))));
    EXPECT_EQ(static_cast<int64_t>(in.lm.positions.size()), want);
  }
}

TEST(DataInstances, MaskShareAnd801010Ratios) {
  auto docs = fake_corpus(200, 5, 30, 5, 20, 2);
  InstanceOptions o;
  o.max_seq_length = 128;
  o.mask.max_predictions_per_seq = 40;  // never binding: the share is exactly round(len * 0.15)
  auto inst = build(docs, o, 5, 3);
  double masked = 0, real = 0, as_mask = 0, kept = 0, random = 0;
  for (const auto& in : inst) {
    real += static_cast<double>(in.tokens.size());
    for (size_t k = 0; k < in.lm.positions.size(); ++k) {
      int32_t now = in.tokens[in.lm.positions[k]];
      masked += 1;
      if (now == kMask)
        as_mask += 1;
      else if (now == in.lm.labels[k])
        kept += 1;
      else
        random += 1;
    }
  }
  ASSERT_GT(masked, 5000);
  EXPECT_NEAR(masked / real, 0.15, 0.01);
  EXPECT_NEAR(as_mask / masked, 0.80, 0.02);
  // a random draw equal to the original counts as "kept" (1/120 of the random ones)
  EXPECT_NEAR(kept / masked, 0.10, 0.015);
  EXPECT_NEAR(random / masked, 0.10, 0.015);
}

TEST(DataInstances, WholeWordMaskingMasksWordsTogether) {
  auto docs = fake_corpus(100, 5, 20, 5, 20, 3);
  InstanceOptions o;
  o.max_seq_length = 128;
  o.mask.max_predictions_per_seq = 20;
  o.mask.whole_word_mask = true;
  auto inst = build(docs, o, 9, 2);
  int words_with_pieces = 0;
  double masked_words = 0, mask_words = 0, kept_words = 0;
  for (const auto& in : inst) {
    auto orig = original(in);
    std::set<int32_t> pos(in.lm.positions.begin(), in.lm.positions.end());
    // walk words: a start token (< 100 or special) followed by ## pieces (>= 100)
    for (size_t i = 1; i < orig.size();) {
      size_t j = i + 1;
      while (j < orig.size() && orig[j] >= 100) ++j;
      if (orig[i] >= 5) {
        size_t n_masked = 0, n_mask_tok = 0, n_kept = 0;
        for (size_t k = i; k < j; ++k) {
          n_masked += pos.count(static_cast<int32_t>(k));
          n_mask_tok += in.tokens[k] == kMask;
          n_kept += pos.count(static_cast<int32_t>(k)) && in.tokens[k] == orig[k];
        }
        EXPECT_TRUE(n_masked == 0 || n_masked == j - i) << "word split by masking";
        if (n_masked > 0) {
          ++masked_words;
          if (n_mask_tok == j - i) ++mask_words;
          if (n_kept == j - i) ++kept_words;
        }
        if (n_masked > 0 && j - i > 1) {
          ++words_with_pieces;
          // The 80/10/10 choice is per word: a word is never part [MASK], part kept. (Per-token
          // choices would mix them in many masked multi-piece words.)
          EXPECT_FALSE(n_mask_tok > 0 && n_kept > 0 && n_mask_tok + n_kept == j - i);
        }
      }
      i = j;
    }
  }
  EXPECT_GT(words_with_pieces, 100);
  // 80/10/10 per word: 80% of masked words are all [MASK], 10% all unchanged, 10% random ids.
  ASSERT_GT(masked_words, 1000);
  EXPECT_NEAR(mask_words / masked_words, 0.8, 0.03);
  EXPECT_NEAR(kept_words / masked_words, 0.1, 0.03);
}

TEST(DataInstances, RandomNextShareNearHalf) {
  // Long documents: the reference forces a random next for one-sentence chunks at document
  // ends, which pushes the share above 50% on short documents.
  auto docs = fake_corpus(100, 60, 120, 4, 12, 4);
  InstanceOptions o;
  o.max_seq_length = 128;
  auto inst = build(docs, o, 6, 2);
  double rn = 0;
  for (const auto& in : inst) rn += in.is_random_next;
  ASSERT_GT(inst.size(), 1000u);
  EXPECT_NEAR(rn / static_cast<double>(inst.size()), 0.5, 0.05);
}

TEST(DataInstances, NoMaskingLeavesSequencesIntact) {
  auto docs = fake_corpus(20, 2, 10, 3, 10, 5);
  InstanceOptions o;
  o.masking = false;
  auto inst = build(docs, o, 1);
  ASSERT_FALSE(inst.empty());
  for (const auto& in : inst) {
    EXPECT_TRUE(in.lm.positions.empty());
    for (int32_t t : in.tokens) EXPECT_NE(t, kMask);
  }
}

TEST(DataInstances, SameSeedSameInstances) {
  auto docs = fake_corpus(30, 1, 20, 1, 30, 6);
  InstanceOptions o;
  o.short_seq_prob = 0.5;
  auto a = build(docs, o, 77), b = build(docs, o, 77), c = build(docs, o, 78);
  ASSERT_EQ(a.size(), b.size());
  bool differs = a.size() != c.size();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tokens, b[i].tokens);
    EXPECT_EQ(a[i].lm.positions, b[i].lm.positions);
    if (i < c.size() && a[i].tokens != c[i].tokens) differs = true;
  }
  EXPECT_TRUE(differs);
}

TEST(DataInstances, SingleDocumentAndOneTokenSentencesWork) {
  std::vector<Document> docs{{{7}, {8}, {9}}};
  InstanceOptions o;
  o.max_seq_length = 8;
  o.mask.max_predictions_per_seq = 2;
  auto inst = build(docs, o, 1, 5);
  ASSERT_FALSE(inst.empty());
  for (const auto& in : inst) EXPECT_LE(in.tokens.size(), 8u);
}
