// The HDF5 pretraining loader: order, rank partitioning, exact resume (across epochs and world
// sizes), prefetch equivalence, dynamic masking and schema errors.
#include <gtest/gtest.h>

#include <set>

#include "bert/common/error.h"
#include "bert/data/hdf5_io.h"
#include "bert/data/loader.h"
#include "test_util.h"

using namespace bert;
using namespace bert::data;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kL = 16, kP = 3;
constexpr int32_t kCls = 2, kSep = 3, kMask = 4, kVocab = 50;

// A shard whose row r carries the sample id (first_id + r) in input_ids[1] and input_ids[2].
void write_shard(const fs::path& p, int64_t rows, int64_t first_id, bool masked, int64_t L = kL) {
  PretrainRows r;
  r.resize(rows, L, masked ? kP : 0);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t id = first_id + i;
    int64_t len = 8 + (id % (L - 8));  // real tokens: [CLS] a b ... [SEP] ... [SEP]
    for (int64_t x = 0; x < len; ++x) {
      int32_t tok = 10 + static_cast<int32_t>((id * 7 + x) % (kVocab - 10));
      if (x == 0) tok = kCls;
      if (x == len / 2 || x == len - 1) tok = kSep;
      r.input_ids[i * L + x] = tok;
      r.input_mask[i * L + x] = 1;
      r.segment_ids[i * L + x] = x > len / 2 ? 1 : 0;
    }
    r.input_ids[i * L + 1] = static_cast<int32_t>(10 + id / 40);
    r.input_ids[i * L + 2] = static_cast<int32_t>(10 + id % 40);
    r.next_sentence_labels[i] = static_cast<int32_t>(id % 2);
    if (masked) {
      r.masked_lm_positions[i * kP + 0] = 3;
      r.masked_lm_ids[i * kP + 0] = 11;
      r.masked_lm_positions[i * kP + 1] = 5;
      r.masked_lm_ids[i * kP + 1] = 12;
    }
  }
  Hdf5Writer w(p, rows, L, masked ? kP : 0, masked, false);
  w.write(0, r);
  w.commit();
}

int64_t sample_id(const train::PretrainBatch& b, int64_t t) {
  return (b.input_ids[t][1].item<int64_t>() - 10) * 40 + (b.input_ids[t][2].item<int64_t>() - 10);
}

std::vector<int64_t> ids_of(const train::PretrainBatch& b) {
  std::vector<int64_t> out;
  for (int64_t t = 0; t < b.size(); ++t) out.push_back(sample_id(b, t));
  return out;
}

struct Shards {
  TempDir dir;
  std::vector<fs::path> files;
  explicit Shards(bool masked = true) {
    int64_t id = 0;
    for (int64_t n : {37, 50, 13}) {  // 100 samples, uneven shards
      files.push_back(dir / ("shard_" + std::to_string(files.size()) + ".hdf5"));
      write_shard(files.back(), n, id, masked);
      id += n;
    }
  }
};

LoaderOptions options(const std::vector<fs::path>& files, int64_t micro, int64_t global, int64_t rank = 0,
                      int64_t world = 1) {
  LoaderOptions o;
  o.files = files;
  o.seed = 7;
  o.micro_batch = micro;
  o.global_batch = global;
  o.rank = rank;
  o.world = world;
  o.chunk_rows = 16;
  o.num_workers = 2;
  o.prefetch = 3;
  return o;
}

}  // namespace

TEST(DataLoader, ResolveShards) {
  Shards s;
  auto from_dir = resolve_shards(s.dir.path.string());
  EXPECT_EQ(from_dir.size(), 3u);
  auto from_glob = resolve_shards((s.dir / "shard_*.hdf5").string());
  EXPECT_EQ(from_glob, from_dir);
  EXPECT_THROW(resolve_shards((s.dir / "nothing_*.h5").string()), UserError);
  TempDir empty;
  EXPECT_THROW(resolve_shards(empty.path.string()), UserError);
}

TEST(DataLoader, OneEpochVisitsEverySampleOnceAndShuffles) {
  Shards s;
  auto src = make_hdf5_source(options(s.files, 4, 8));
  std::vector<int64_t> seen;
  for (int i = 0; i < 12; ++i) {  // 100 samples / 8 per step = 12 steps = 24 micro-batches
    for (int a = 0; a < 2; ++a) {
      auto b = src->next(4);
      ASSERT_TRUE(b);
      for (auto id : ids_of(*b)) seen.push_back(id);
    }
  }
  std::set<int64_t> uniq(seen.begin(), seen.end());
  EXPECT_EQ(uniq.size(), 96u);  // the last partial global batch (4 samples) is dropped
  EXPECT_EQ(src->epoch(), 1);
  std::vector<int64_t> sorted = seen;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(seen, sorted) << "samples came out in file order";
  // the next epoch has another order
  auto b = src->next(4);
  ASSERT_TRUE(b);
  EXPECT_NE(ids_of(*b), std::vector<int64_t>(seen.begin(), seen.begin() + 4));
}

TEST(DataLoader, FieldsComeFromTheFile) {
  Shards s;
  auto src = make_hdf5_source(options(s.files, 4, 4));
  auto b = src->next(4);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->input_ids.sizes(), (std::vector<int64_t>{4, kL}));
  EXPECT_EQ(b->masked_lm_positions.sizes(), (std::vector<int64_t>{4, kP}));
  for (int64_t t = 0; t < 4; ++t) {
    int64_t id = sample_id(*b, t);
    EXPECT_EQ(b->next_sentence_labels[t].item<int64_t>(), id % 2);
    EXPECT_EQ(b->input_ids[t][0].item<int64_t>(), kCls);
    EXPECT_EQ(b->attention_mask[t].sum().item<int64_t>(), 8 + id % (kL - 8));
    EXPECT_EQ(b->masked_lm_positions[t][0].item<int64_t>(), 3);
    EXPECT_EQ(b->masked_lm_ids[t][1].item<int64_t>(), 12);
    EXPECT_EQ(b->masked_lm_positions[t][2].item<int64_t>(), 0);
  }
}

TEST(DataLoader, RanksPartitionEachStep) {
  Shards s;
  auto single = make_hdf5_source(options(s.files, 2, 8));
  auto r0 = make_hdf5_source(options(s.files, 2, 8, 0, 2));
  auto r1 = make_hdf5_source(options(s.files, 2, 8, 1, 2));
  std::multiset<int64_t> all;
  for (int step = 0; step < 12; ++step) {
    std::vector<int64_t> want, got;
    for (int a = 0; a < 4; ++a)
      for (auto id : ids_of(*single->next(2))) want.push_back(id);
    for (int a = 0; a < 2; ++a)
      for (auto id : ids_of(*r0->next(2))) got.push_back(id);
    for (int a = 0; a < 2; ++a)
      for (auto id : ids_of(*r1->next(2))) got.push_back(id);
    EXPECT_EQ(got, want) << "step " << step;  // rank 0 takes the first half of the step, rank 1 the rest
    all.insert(got.begin(), got.end());
  }
  EXPECT_EQ(all.size(), 96u);
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 96u) << "a sample was read by two ranks";
}

TEST(DataLoader, ExactResumeAcrossEpochBoundary) {
  Shards s;
  auto full = make_hdf5_source(options(s.files, 4, 8));
  std::vector<std::vector<int64_t>> reference;
  for (int i = 0; i < 40; ++i) reference.push_back(ids_of(*full->next(4)));

  auto first = make_hdf5_source(options(s.files, 4, 8));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(ids_of(*first->next(4)), reference[i]);  // 10 steps
  config::json cursor = first->cursor();
  EXPECT_EQ(cursor["samples_in_epoch"], 80);
  first.reset();

  auto resumed = make_hdf5_source(options(s.files, 4, 8));
  resumed->restore(cursor);
  for (int i = 20; i < 40; ++i) EXPECT_EQ(ids_of(*resumed->next(4)), reference[i]) << "micro-batch " << i;
  EXPECT_EQ(resumed->epoch(), 1);
}

TEST(DataLoader, ResumeWithAnotherWorldSize) {
  Shards s;
  auto r0 = make_hdf5_source(options(s.files, 2, 8, 0, 2));
  auto r1 = make_hdf5_source(options(s.files, 2, 8, 1, 2));
  for (int i = 0; i < 6; ++i) {  // 3 steps on 2 ranks
    r0->next(2);
    r1->next(2);
  }
  auto cursor = r0->cursor();
  EXPECT_EQ(cursor, r1->cursor());
  std::vector<int64_t> want;
  for (int a = 0; a < 2; ++a)
    for (auto id : ids_of(*r0->next(2))) want.push_back(id);
  for (int a = 0; a < 2; ++a)
    for (auto id : ids_of(*r1->next(2))) want.push_back(id);

  auto one = make_hdf5_source(options(s.files, 4, 8));
  one->restore(cursor);
  std::vector<int64_t> got;
  for (int a = 0; a < 2; ++a)
    for (auto id : ids_of(*one->next(4))) got.push_back(id);
  EXPECT_EQ(got, want);
}

TEST(DataLoader, PrefetchWorkersDoNotChangeTheOrder) {
  Shards s;
  auto o = options(s.files, 4, 8);
  o.num_workers = 0;
  auto sync = make_hdf5_source(o);
  o.num_workers = 3;
  auto async = make_hdf5_source(o);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(ids_of(*sync->next(4)), ids_of(*async->next(4)));
}

TEST(DataLoader, EpochLimitEnds) {
  Shards s;
  auto o = options(s.files, 4, 8);
  o.epochs = 1;
  auto src = make_hdf5_source(o);
  int n = 0;
  while (src->next(4)) ++n;
  EXPECT_EQ(n, 24);
}

TEST(DataLoader, RejectsForeignCursor) {
  Shards s;
  auto src = make_hdf5_source(options(s.files, 4, 8));
  EXPECT_THROW(src->restore(config::json{{"source", "synthetic"}, {"index", 3}}), UserError);
  auto c = src->cursor();
  c["total_samples"] = 1000;
  EXPECT_THROW(src->restore(c), UserError);
  c = src->cursor();
  c["seed"] = 8;
  EXPECT_THROW(src->restore(c), UserError);
}

TEST(DataLoader, SchemaProblemsNameTheFile) {
  TempDir d;
  write_shard(d / "a.hdf5", 20, 0, true);
  write_shard(d / "b.hdf5", 20, 20, true, 24);  // other sequence length
  try {
    make_hdf5_source(options({d / "a.hdf5", d / "b.hdf5"}, 4, 8));
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("b.hdf5"), std::string::npos) << e.what();
  }
  write_shard(d / "c.hdf5", 20, 40, false);
  EXPECT_THROW(make_hdf5_source(options({d / "a.hdf5", d / "c.hdf5"}, 4, 8)), UserError);
  EXPECT_THROW(make_hdf5_source(options({d / "c.hdf5"}, 4, 8)), UserError);  // unmasked, no vocab
  EXPECT_THROW(make_hdf5_source(options({d / "a.hdf5"}, 4, 64)), UserError);  // fewer samples than one batch
  EXPECT_THROW(make_hdf5_source(options({d / "a.hdf5"}, 3, 8)), UserError);   // micro does not divide
}

TEST(DataLoader, DynamicMaskingStatisticsAndDeterminism) {
  Shards s(false);
  auto o = options(s.files, 4, 8);
  o.have_masking_vocab = true;
  o.masking_vocab.cls_id = kCls;
  o.masking_vocab.sep_id = kSep;
  o.masking_vocab.mask_id = kMask;
  o.masking_vocab.vocab_size = kVocab;
  o.masking_vocab.is_continuation.assign(kVocab, 0);
  o.masking.masked_lm_prob = 0.15;
  o.masking.max_predictions_per_seq = 5;
  auto src = make_hdf5_source(o);
  int64_t masked = 0, as_mask = 0, real = 0;
  std::vector<torch::Tensor> first_pass;
  for (int i = 0; i < 24; ++i) {
    auto b = *src->next(4);
    first_pass.push_back(b.input_ids.clone());
    for (int64_t t = 0; t < 4; ++t) {
      int64_t len = b.attention_mask[t].sum().item<int64_t>();
      real += len;
      for (int64_t x = 0; x < 5; ++x) {
        int64_t p = b.masked_lm_positions[t][x].item<int64_t>();
        if (p == 0) continue;
        ++masked;
        ASSERT_LT(p, len);
        int64_t label = b.masked_lm_ids[t][x].item<int64_t>();
        EXPECT_NE(label, kCls);
        EXPECT_NE(label, kSep);
        if (b.input_ids[t][p].item<int64_t>() == kMask) ++as_mask;
      }
    }
  }
  double share = static_cast<double>(masked) / static_cast<double>(real);
  EXPECT_NEAR(share, 0.15, 0.03);
  EXPECT_NEAR(static_cast<double>(as_mask) / static_cast<double>(masked), 0.8, 0.08);
  // the same samples are masked the same way after a resume
  auto again = make_hdf5_source(o);
  for (int i = 0; i < 10; ++i) again->next(4);
  auto c = again->cursor();
  auto resumed = make_hdf5_source(o);
  resumed->restore(c);
  for (int i = 10; i < 24; ++i) EXPECT_TRUE(torch::equal(resumed->next(4)->input_ids, first_pass[i])) << i;
}
