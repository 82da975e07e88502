// Sequence packing: the SPFHP packer, packed rows (every sequence and masked token conserved,
// limits kept), the packed HDF5 schema, the loader's packed batches, and `shard --pack`.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <numeric>
#include <tuple>

#include "bert/common/error.h"
#include "bert/config/fields.h"
#include "bert/data/loader.h"
#include "bert/data/pack.h"
#include "pack_test_helpers.h"
#include "test_util.h"

using namespace bert;
using namespace bert::test;

namespace {

// One sequence as the packer must preserve it: tokens, segments, (position, id) of masked
// tokens relative to the sequence, NSP label.
using Seq = std::tuple<std::vector<int32_t>, std::vector<int32_t>, std::vector<std::pair<int32_t, int32_t>>, int32_t>;

std::multiset<Seq> unpacked_sequences(const data::PretrainRows& r) {
  std::multiset<Seq> out;
  const int64_t L = r.seq_length, P = r.max_predictions;
  for (int64_t i = 0; i < r.rows; ++i) {
    int64_t n = 0;
    while (n < L && r.input_mask[i * L + n]) ++n;
    Seq s;
    std::get<0>(s).assign(r.input_ids.begin() + i * L, r.input_ids.begin() + i * L + n);
    std::get<1>(s).assign(r.segment_ids.begin() + i * L, r.segment_ids.begin() + i * L + n);
    for (int64_t k = 0; k < P && r.masked_lm_positions[i * P + k] != 0; ++k)
      std::get<2>(s).emplace_back(r.masked_lm_positions[i * P + k], r.masked_lm_ids[i * P + k]);
    std::get<3>(s) = r.next_sentence_labels[i];
    out.insert(s);
  }
  return out;
}

// Reads the sequences back out of packed rows, checking the row invariants on the way.
std::multiset<Seq> packed_sequences(const data::PretrainRows& r) {
  std::multiset<Seq> out;
  const int64_t L = r.seq_length, P = r.max_predictions, S = r.max_sequences;
  for (int64_t i = 0; i < r.rows; ++i) {
    // sequence_index: 1, 1, ..., 2, 2, ..., k, then 0 padding; input_mask 1 exactly where it is > 0
    int64_t k = 0, x = 0;
    std::vector<int64_t> start, len;
    while (x < L && r.sequence_index[i * L + x] != 0) {
      EXPECT_EQ(r.sequence_index[i * L + x], k + 1) << "row " << i;
      start.push_back(x);
      int64_t n = 0;
      while (x < L && r.sequence_index[i * L + x] == k + 1) {
        EXPECT_EQ(r.position_ids[i * L + x], n) << "row " << i;
        EXPECT_EQ(r.input_mask[i * L + x], 1);
        ++n;
        ++x;
      }
      len.push_back(n);
      ++k;
    }
    for (; x < L; ++x) {
      EXPECT_EQ(r.sequence_index[i * L + x], 0);
      EXPECT_EQ(r.input_mask[i * L + x], 0);
      EXPECT_EQ(r.input_ids[i * L + x], 0);
    }
    EXPECT_GE(k, 1);
    EXPECT_LE(k, S);
    std::vector<Seq> seqs(k);
    for (int64_t j = 0; j < S; ++j) {
      if (j < k) {
        EXPECT_EQ(r.cls_positions[i * S + j], start[j]);
        std::get<0>(seqs[j]).assign(r.input_ids.begin() + i * L + start[j], r.input_ids.begin() + i * L + start[j] + len[j]);
        std::get<1>(seqs[j]).assign(r.segment_ids.begin() + i * L + start[j],
                                    r.segment_ids.begin() + i * L + start[j] + len[j]);
        std::get<3>(seqs[j]) = r.next_sentence_labels[i * S + j];
      } else {
        EXPECT_EQ(r.next_sentence_labels[i * S + j], -1);
        EXPECT_EQ(r.cls_positions[i * S + j], 0);
      }
    }
    int32_t last = 0;
    for (int64_t m = 0; m < P && r.masked_lm_positions[i * P + m] != 0; ++m) {
      int32_t p = r.masked_lm_positions[i * P + m];
      EXPECT_GT(p, last) << "masked positions ascend";
      last = p;
      int64_t j = 0;
      while (j + 1 < k && start[j + 1] <= p) ++j;
      EXPECT_LT(p, start[j] + len[j]);
      std::get<2>(seqs[j]).emplace_back(p - static_cast<int32_t>(start[j]), r.masked_lm_ids[i * P + m]);
    }
    for (auto& s : seqs) out.insert(s);
  }
  return out;
}

}  // namespace

TEST(DataPack, SpfhpPutsEachSequenceInTheFullestPackThatFits) {
  // 10 fills a row; 6 opens a pack that 4 then fills; 3 and 1 share the last.
  auto packs = data::pack_sequences({3, 10, 6, 1, 4}, {}, 10, 0, 3);
  ASSERT_EQ(packs.size(), 3u);
  EXPECT_EQ(packs[0], (std::vector<int64_t>{1}));
  EXPECT_EQ(packs[1], (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(packs[2], (std::vector<int64_t>{0, 3}));
  // At most max_per_row sequences even when tokens would fit.
  auto capped = data::pack_sequences({1, 1, 1, 1, 1, 1, 1}, {}, 10, 0, 3);
  ASSERT_EQ(capped.size(), 3u);
  EXPECT_EQ(capped[0].size(), 3u);
  EXPECT_EQ(capped[2].size(), 1u);
  // The prediction budget is a second limit.
  auto pred = data::pack_sequences({2, 2, 2}, {3, 3, 3}, 10, 5, 3);
  EXPECT_EQ(pred.size(), 3u);
  EXPECT_THROW(data::pack_sequences({11}, {}, 10, 0, 3), UserError);
}

TEST(DataPack, RandomLengthsKeepEverySequenceAndEveryLimit) {
  std::mt19937 g(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t L = 64, n = 500, maxp = 12;
    std::vector<int64_t> len(n), pred(n);
    for (int64_t i = 0; i < n; ++i) {
      len[i] = std::uniform_int_distribution<int64_t>(1, L)(g);
      pred[i] = std::uniform_int_distribution<int64_t>(0, 6)(g);
    }
    auto packs = data::pack_sequences(len, pred, L, maxp, 3);
    std::vector<int> seen(n, 0);
    for (const auto& p : packs) {
      ASSERT_GE(p.size(), 1u);
      ASSERT_LE(p.size(), 3u);
      int64_t t = 0, q = 0;
      for (int64_t i : p) {
        ++seen[i];
        t += len[i];
        q += pred[i];
      }
      EXPECT_LE(t, L);
      EXPECT_LE(q, maxp);
    }
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "sequence " << i;
    int64_t tokens = std::accumulate(len.begin(), len.end(), int64_t{0});
    EXPECT_LT(static_cast<double>(packs.size()), 0.8 * n) << "packing saved rows";
    EXPECT_GE(static_cast<double>(packs.size()) * L, static_cast<double>(tokens));
  }
}

TEST(DataPack, PackedRowsConserveSequencesAndMaskedTokens) {
  auto in = random_instances(300, 48, 6, 11, 100, 5);
  data::PackStats st;
  data::PackOptions o;
  auto out = data::pack_rows(in, o, 0, &st);
  EXPECT_TRUE(out.packed());
  EXPECT_EQ(out.max_sequences, 3);
  EXPECT_EQ(out.max_predictions, 18);
  EXPECT_EQ(out.seq_length, 48);
  EXPECT_EQ(unpacked_sequences(in), packed_sequences(out));
  EXPECT_EQ(st.sequences, 300);
  EXPECT_EQ(st.rows_in, 300);
  EXPECT_EQ(st.rows_out, out.rows);
  EXPECT_LT(out.rows, 300);
  int64_t tokens = 0, masked = 0;
  for (auto v : in.input_mask) tokens += v;
  for (auto v : in.masked_lm_positions) masked += v != 0;
  EXPECT_EQ(st.tokens, tokens);
  EXPECT_EQ(st.masked_tokens, masked);
  EXPECT_NEAR(st.sequences_per_row(), 300.0 / static_cast<double>(out.rows), 1e-12);
  EXPECT_LT(st.padding_after(), st.padding_before());
  int64_t held = 0;
  for (size_t k = 0; k < st.rows_holding.size(); ++k) held += static_cast<int64_t>(k) * st.rows_holding[k];
  EXPECT_EQ(held, 300);
  // A capped prediction budget is respected and still conserves everything.
  o.max_predictions = 8;
  auto capped = data::pack_rows(in, o, 0, nullptr);
  EXPECT_EQ(capped.max_predictions, 8);
  EXPECT_EQ(unpacked_sequences(in), packed_sequences(capped));
  // Same input, same seed: same bytes; packing twice or packing --no-masking rows is refused.
  EXPECT_EQ(data::pack_rows(in, data::PackOptions{}, 0, nullptr).input_ids, out.input_ids);
  EXPECT_THROW(data::pack_rows(out, data::PackOptions{}, 0, nullptr), UserError);
  data::PretrainRows unmasked = in;
  unmasked.max_predictions = 0;
  EXPECT_THROW(data::pack_rows(unmasked, data::PackOptions{}, 0, nullptr), UserError);
}

TEST(DataPack, PackedHdf5RoundTripsAndTheLoaderFillsPackedBatches) {
  TempDir t;
  auto in = random_instances(64, 32, 5, 3);
  auto packed = data::pack_rows(in, data::PackOptions{}, 0, nullptr);
  write_rows(t / "p.hdf5", packed);
  data::Hdf5Reader r(t / "p.hdf5");
  EXPECT_TRUE(r.is_packed());
  EXPECT_EQ(r.max_sequences(), 3);
  EXPECT_EQ(r.max_predictions(), 15);
  data::PretrainRows back;
  r.read(0, r.size(), back);
  EXPECT_EQ(back.input_ids, packed.input_ids);
  EXPECT_EQ(back.position_ids, packed.position_ids);
  EXPECT_EQ(back.sequence_index, packed.sequence_index);
  EXPECT_EQ(back.cls_positions, packed.cls_positions);
  EXPECT_EQ(back.next_sentence_labels, packed.next_sentence_labels);
  EXPECT_EQ(back.masked_lm_positions, packed.masked_lm_positions);

  data::LoaderOptions o;
  o.files = {t / "p.hdf5"};
  o.micro_batch = o.global_batch = packed.rows;
  o.num_workers = 0;
  o.epochs = 1;
  auto src = data::make_hdf5_source(o);
  EXPECT_NE(src->describe().find("packed"), std::string::npos);
  auto b = src->next(packed.rows);
  ASSERT_TRUE(b.has_value());
  ASSERT_TRUE(b->packed());
  EXPECT_EQ(b->sequences(), 64);
  EXPECT_EQ(b->next_sentence_labels.sizes(), (std::vector<int64_t>{packed.rows, 3}));
  EXPECT_EQ(b->cls_positions.sizes(), (std::vector<int64_t>{packed.rows, 3}));
  EXPECT_EQ(b->position_ids.sizes(), (std::vector<int64_t>{packed.rows, 32}));
  EXPECT_EQ(b->attention_mask.sum().item<int64_t>(), b->sequence_index.gt(0).sum().item<int64_t>());
  // The shuffled batch holds the file's rows: compare as sorted sequence-index row sums.
  EXPECT_EQ(b->sequence_index.sum().item<int64_t>(),
            std::accumulate(packed.sequence_index.begin(), packed.sequence_index.end(), int64_t{0}));

  // Packed and unpacked shards do not mix.
  write_rows(t / "u.hdf5", in);
  o.files = {t / "p.hdf5", t / "u.hdf5"};
  EXPECT_THROW(data::make_hdf5_source(o), UserError);
}

TEST(DataPack, ShardPackCliWritesPackedShardsAndTheManifest) {
  TempDir t;
  write_rows(t / "in" / "a.hdf5", random_instances(90, 32, 5, 1));
  write_rows(t / "in" / "b.hdf5", random_instances(70, 32, 5, 2));
  auto r = run_cli("shard --input '" + (t / "in").string() + "/*.hdf5' --output-dir '" + (t / "out").string() +
                   "' --num-shards 2 --pack");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("sequences/row"), std::string::npos) << r.err;
  auto m = config::json::parse(read_text(t / "out" / "manifest.json"));
  EXPECT_EQ(m["max_sequences_per_row"].get<int64_t>(), 3);
  EXPECT_EQ(m["max_predictions_per_row"].get<int64_t>(), 15);
  EXPECT_EQ(m["packing"]["sequences"].get<int64_t>(), 160);
  EXPECT_GT(m["packing"]["sequences_per_row"].get<double>(), 1.2);
  EXPECT_LT(m["packing"]["padding_fraction_after"].get<double>(), m["packing"]["padding_fraction_before"].get<double>());
  int64_t seqs = 0;
  for (const char* f : {"shard_00000.hdf5", "shard_00001.hdf5"}) {
    data::Hdf5Reader rd(t / "out" / f);
    ASSERT_TRUE(rd.is_packed());
    data::PretrainRows rows;
    rd.read(0, rd.size(), rows);
    for (int64_t i = 0; i < rows.rows; ++i)
      seqs += *std::max_element(rows.sequence_index.begin() + i * 32, rows.sequence_index.begin() + (i + 1) * 32);
  }
  EXPECT_EQ(seqs, 160);
  // Packing packed files is refused with one line naming the file.
  auto again = run_cli("shard --input '" + (t / "out" / "shard_00000.hdf5").string() + "' --output-dir '" +
                       (t / "again").string() + "' --num-shards 1 --pack");
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("already packed"), std::string::npos) << again.err;
}

TEST(DataPack, PreparePackWritesPackedShardsNextToTheShards) {
  BERT_REQUIRE_SHARED_DATA(data);
  TempDir t;
  auto r = run_cli("prepare --input '" + (data / "corpus/sample_text.txt").string() + "' --vocab '" +
                   (data / "vocab/bert-base-uncased-vocab.txt").string() + "' --output-dir '" + (t / "out").string() +
                   "' --max-seq-length 128 --max-predictions-per-seq 20 --dupe-factor 2 --num-shards 2 --pack");
  ASSERT_EQ(r.code, 0) << r.err;
  auto m = config::json::parse(read_text(t / "out" / "packed" / "manifest.json"));
  auto prep = config::json::parse(read_text(t / "out" / "manifest.json"));
  EXPECT_EQ(m["packing"]["sequences"].get<int64_t>(), prep["totals"]["instances"].get<int64_t>());
  EXPECT_EQ(m["files"].size(), prep["shards"].size());
  EXPECT_GT(m["packing"]["sequences_per_row"].get<double>(), 1.0);
  // The packed directory trains like any other: the loader reads it as packed.
  data::LoaderOptions o;
  o.files = data::resolve_shards((t / "out" / "packed").string());
  o.micro_batch = o.global_batch = 2;
  o.num_workers = 0;
  auto src = data::make_hdf5_source(o);
  auto b = src->next(2);
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->packed());
  auto bad = run_cli("prepare --input '" + (data / "corpus/sample_text.txt").string() + "' --vocab '" +
                     (data / "vocab/bert-base-uncased-vocab.txt").string() + "' --output-dir '" +
                     (t / "bad").string() + "' --no-masking --pack");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--pack needs masked instances"), std::string::npos) << bad.err;
}
