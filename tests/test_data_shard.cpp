// `shard`: rebalancing conserves every instance in order, gives equal counts, reads MLPerf's
// int16 variant, and refuses mismatched inputs.
#include <hdf5.h>

#include "bert/common/error.h"
#include "bert/data/hdf5_io.h"
#include "bert/data/shard.h"
#include "test_util.h"

using namespace bert;
using namespace bert::data;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

PretrainRows numbered_rows(int64_t first, int64_t n, int64_t L, int64_t P) {
  PretrainRows r;
  r.resize(n, L, P);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < L; ++t) {
      r.input_ids[i * L + t] = static_cast<int32_t>((first + i) * 10 + t);
      r.input_mask[i * L + t] = 1;
      r.segment_ids[i * L + t] = t >= L / 2;
    }
    for (int64_t k = 0; k < P; ++k) {
      r.masked_lm_positions[i * P + k] = static_cast<int32_t>(k + 1);
      r.masked_lm_ids[i * P + k] = static_cast<int32_t>(first + i + k);
    }
    r.next_sentence_labels[i] = static_cast<int32_t>((first + i) % 2);
  }
  return r;
}

void write_ours(const fs::path& p, int64_t first, int64_t n, int64_t L, int64_t P) {
  Hdf5Writer w(p, n, L, P, P > 0, false);
  w.write(0, numbered_rows(first, n, L, P));
  w.commit();
}

// MLPerf's fixed-length variant: int16 ids and positions.
void write_int16(const fs::path& p, int64_t first, int64_t n, int64_t L, int64_t P) {
  PretrainRows r = numbered_rows(first, n, L, P);
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  auto put = [&](const char* name, hid_t type, std::vector<hsize_t> dims, const std::vector<int32_t>& v) {
    hid_t s = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    hid_t d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(d);
    H5Sclose(s);
  };
  hsize_t N = n, LL = L, PP = P;
  put("input_ids", H5T_STD_I16LE, {N, LL}, r.input_ids);
  put("input_mask", H5T_STD_I8LE, {N, LL}, r.input_mask);
  put("segment_ids", H5T_STD_I8LE, {N, LL}, r.segment_ids);
  put("masked_lm_positions", H5T_STD_I16LE, {N, PP}, r.masked_lm_positions);
  put("masked_lm_ids", H5T_STD_I16LE, {N, PP}, r.masked_lm_ids);
  put("next_sentence_labels", H5T_STD_I8LE, {N}, r.next_sentence_labels);
  H5Fclose(f);
}

}  // namespace

TEST(DataShard, ConservesEveryInstanceInOrderWithEqualCounts) {
  TempDir tmp;
  const int64_t L = 12, P = 3;
  fs::create_directories(tmp / "in");
  write_ours(tmp / "in/a.hdf5", 0, 17, L, P);
  write_int16(tmp / "in/b.hdf5", 17, 5, L, P);
  write_ours(tmp / "in/c.hdf5", 22, 29, L, P);
  ShardConfig c;
  c.inputs = {(tmp / "in/a.hdf5").string(), (tmp / "in/b.hdf5").string(), (tmp / "in/c.hdf5").string()};
  c.output_dir = (tmp / "out").string();
  c.num_shards = 4;
  ShardResult res = run_shard(c);
  ASSERT_EQ(res.files.size(), 4u);
  EXPECT_EQ(res.total, 51);
  PretrainRows want = numbered_rows(0, 51, L, P), got;
  int64_t row = 0;
  for (const auto& f : res.files) {
    Hdf5Reader r(f);
    EXPECT_TRUE(r.size() == 12 || r.size() == 13) << r.size();
    r.read(0, r.size(), got);
    for (int64_t i = 0; i < got.rows; ++i, ++row) {
      for (int64_t t = 0; t < L; ++t) {
        ASSERT_EQ(got.input_ids[i * L + t], want.input_ids[row * L + t]);
        ASSERT_EQ(got.segment_ids[i * L + t], want.segment_ids[row * L + t]);
      }
      for (int64_t k = 0; k < P; ++k) ASSERT_EQ(got.masked_lm_ids[i * P + k], want.masked_lm_ids[row * P + k]);
      ASSERT_EQ(got.next_sentence_labels[i], want.next_sentence_labels[row]);
    }
  }
  EXPECT_EQ(row, 51);
}

TEST(DataShard, NoMaskingFilesStayUnmasked) {
  TempDir tmp;
  write_ours(tmp / "a.hdf5", 0, 7, 8, 0);
  ShardConfig c;
  c.inputs = {(tmp / "a.hdf5").string()};
  c.output_dir = (tmp / "out").string();
  c.num_shards = 2;
  auto res = run_shard(c);
  Hdf5Reader r(res.files[1]);
  EXPECT_FALSE(r.has_masking());
  EXPECT_EQ(r.size(), 4);
}

TEST(DataShard, RefusesMismatchedShapesAndTooManyShards) {
  TempDir tmp;
  write_ours(tmp / "a.hdf5", 0, 4, 8, 2);
  write_ours(tmp / "b.hdf5", 0, 4, 16, 2);
  ShardConfig c;
  c.inputs = {(tmp / "a.hdf5").string(), (tmp / "b.hdf5").string()};
  c.output_dir = (tmp / "out").string();
  c.num_shards = 2;
  EXPECT_THROW(run_shard(c), UserError);
  c.inputs = {(tmp / "a.hdf5").string()};
  c.num_shards = 5;
  EXPECT_THROW(run_shard(c), UserError);
  EXPECT_FALSE(fs::exists(tmp / "out/shard_00000.hdf5"));
}
