// TensorBundle reading on checkpoints the tests write themselves: values, dtypes, lookup by path,
// and clear errors (never a crash) for corrupt and truncated index and data files.
#include <gtest/gtest.h>

#include <cstring>

#include "bert/common/error.h"
#include "bert/io/tensorbundle.h"
#include "bert/io/tensorbundle_import.h"
#include "bert/io/tensorbundle_table.h"
#include "bert/io/tensorbundle_wire.h"
#include "test_util.h"

using namespace bert;
using namespace bert::io;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::vector<BundleTensor> sample_tensors() {
  std::vector<float> kernel(3 * 2);
  for (size_t i = 0; i < kernel.size(); ++i) kernel[i] = 0.5f * static_cast<float>(i);
  return {
      {"bert/pooler/dense/kernel", kTfFloat, {3, 2}, raw(kernel)},  // [in=3, out=2]
      {"bert/pooler/dense/bias", kTfFloat, {2}, raw(std::vector<float>{1.5f, -2.0f})},
      {"bert/pooler/dense/kernel/adam_m", kTfFloat, {3, 2}, raw(std::vector<float>(6, 0.f))},
      {"global_step", kTfInt64, {}, raw(std::vector<int64_t>{1234})},
      {"counts", kTfInt32, {3}, raw(std::vector<int32_t>{7, -8, 9})},
      {"wide", kTfDouble, {1}, raw(std::vector<double>{0.25})},
      {"half", kTfHalf, {1}, raw(std::vector<uint16_t>{0x3C00})},      // 1.0
      {"brain", kTfBFloat16, {1}, raw(std::vector<uint16_t>{0x4000})},  // 2.0
  };
}

// Writes prefix.index / prefix.data-00000-of-00001 and returns the prefix.
fs::path write_checkpoint(const fs::path& dir, const std::vector<BundleTensor>& tensors,
                          const std::string& name = "model.ckpt") {
  auto [index, data] = write_bundle(tensors);
  fs::path prefix = dir / name;
  bert::test::write_text(fs::path(prefix.string() + ".index"), index);
  bert::test::write_text(fs::path(prefix.string() + ".data-00000-of-00001"), data);
  return prefix;
}

// The message of the UserError `f` throws, or "" (and a test failure) when it throws none.
template <class F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected UserError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected UserError, got none";
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(IoTfBundle, ReadsWhatWasWritten) {
  TempDir dir;
  fs::path prefix = write_checkpoint(dir.path, sample_tensors());
  TensorBundle b(prefix);
  EXPECT_EQ(b.header().num_shards, 1);
  ASSERT_EQ(b.entries().size(), 8u);
  EXPECT_TRUE(std::is_sorted(b.entries().begin(), b.entries().end(),
                             [](const auto& x, const auto& y) { return x.name < y.name; }));
  torch::Tensor k = b.read("bert/pooler/dense/kernel");
  EXPECT_EQ(k.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(k.dtype(), torch::kFloat32);
  EXPECT_FLOAT_EQ(k[2][1].item<float>(), 2.5f);
  EXPECT_EQ(b.read("global_step").item<int64_t>(), 1234);
  EXPECT_EQ(b.read("global_step").dim(), 0);
  EXPECT_EQ(b.read("counts")[1].item<int32_t>(), -8);
  EXPECT_EQ(b.read("wide").item<double>(), 0.25);
  EXPECT_EQ(b.read("half").to(torch::kFloat).item<float>(), 1.0f);
  EXPECT_EQ(b.read("brain").to(torch::kFloat).item<float>(), 2.0f);
  EXPECT_TRUE(contains(user_error([&] { b.read("nope"); }), "'nope' not found"));
}

TEST(IoTfBundle, ManyEntriesAcrossBlocksAndRestarts) {
  std::vector<std::pair<std::string, std::string>> kv;
  for (int i = 0; i < 300; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "layer_%04d/w", i);
    kv.emplace_back(key, std::string(static_cast<size_t>(i % 7), 'v'));
  }
  std::string table = write_sstable(kv, 37, 5);
  EXPECT_EQ(read_sstable(table, "t"), kv);
}

TEST(IoTfBundle, PathFormsResolveToThePrefix) {
  TempDir dir;
  fs::path prefix = write_checkpoint(dir.path, sample_tensors(), "model.ckpt-100");
  EXPECT_EQ(resolve_tf_checkpoint_prefix(prefix), prefix);
  EXPECT_EQ(resolve_tf_checkpoint_prefix(prefix.string() + ".index"), prefix);
  EXPECT_EQ(resolve_tf_checkpoint_prefix(prefix.string() + ".data-00000-of-00001"), prefix);
  EXPECT_EQ(resolve_tf_checkpoint_prefix(dir.path), prefix);
  write_checkpoint(dir.path, sample_tensors(), "model.ckpt-200");
  EXPECT_TRUE(contains(user_error([&] { resolve_tf_checkpoint_prefix(dir.path); }), "several checkpoints"));
  bert::test::write_text(dir / "checkpoint", "model_checkpoint_path: \"model.ckpt-200\"\n"
                                             "all_model_checkpoint_paths: \"model.ckpt-100\"\n");
  EXPECT_EQ(resolve_tf_checkpoint_prefix(dir.path), dir / "model.ckpt-200");
  EXPECT_TRUE(contains(user_error([&] { resolve_tf_checkpoint_prefix(dir / "missing.ckpt"); }), "not found"));
  EXPECT_FALSE(is_tf_checkpoint(dir / "missing.ckpt"));
}

TEST(IoTfBundle, ImportMapsTransposesAndSkips) {
  TempDir dir;
  fs::path prefix = write_checkpoint(dir.path, sample_tensors());
  ImportedWeights w = import_tf_checkpoint(prefix);
  ASSERT_EQ(w.tensors.size(), 2u);
  const torch::Tensor* weight = w.find("bert.pooler.dense.weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->sizes(), (std::vector<int64_t>{2, 3}));  // [out, in]
  EXPECT_FLOAT_EQ((*weight)[1][2].item<float>(), 2.5f);      // kernel[2][1]
  EXPECT_TRUE(weight->is_contiguous());
  EXPECT_FLOAT_EQ((*w.find("bert.pooler.dense.bias"))[1].item<float>(), -2.0f);
  EXPECT_EQ(w.skipped.size(), 2u);  // adam_m, global_step
  EXPECT_EQ(w.unmapped, (std::vector<std::string>{"brain", "counts", "half", "wide"}));
  EXPECT_FALSE(w.config.has_value());  // no bert_config.json next to it
}

TEST(IoTfBundle, EveryTruncationOfTheIndexIsAClearError) {
  auto [index, data] = write_bundle(sample_tensors());
  for (size_t n = 0; n < index.size(); ++n) {
    std::string msg = user_error([&] { parse_bundle_index(std::string_view(index).substr(0, n), "x.index"); });
    EXPECT_TRUE(contains(msg, "x.index")) << "length " << n << ": " << msg;
  }
}

TEST(IoTfBundle, EveryFlippedIndexByteIsCaughtOrHarmless) {
  auto [index, data] = write_bundle(sample_tensors());
  int caught = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    std::string bad = index;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    try {
      BundleIndex idx = parse_bundle_index(bad, "x.index");
      // the only bytes a CRC does not cover are the footer's padding
      EXPECT_GE(i, index.size() - 48) << "byte " << i << " changed without notice";
      EXPECT_EQ(idx.entries.size(), 8u);
    } catch (const UserError& e) {
      ++caught;
      EXPECT_TRUE(contains(e.what(), "x.index")) << e.what();
    }
  }
  EXPECT_GT(caught, static_cast<int>(index.size()) - 48);
}

TEST(IoTfBundle, CorruptAndTruncatedDataFilesAreClearErrors) {
  TempDir dir;
  fs::path prefix = write_checkpoint(dir.path, sample_tensors());
  fs::path data = prefix.string() + ".data-00000-of-00001";
  std::string good = bert::test::read_text(data);

  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x01;
  bert::test::write_text(data, flipped);
  {
    TensorBundle b(prefix);
    std::vector<std::string> errors;
    for (const auto& e : b.entries()) {
      try {
        b.read(e);
      } catch (const UserError& err) {
        errors.push_back(err.what());
      }
    }
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_TRUE(contains(errors[0], "checksum mismatch")) << errors[0];
  }

  bert::test::write_text(data, good.substr(0, good.size() - 3));
  {
    TensorBundle b(prefix);
    std::string msg = user_error([&] {
      for (const auto& e : b.entries()) b.read(e);
    });
    EXPECT_TRUE(contains(msg, "lies outside")) << msg;
  }

  fs::remove(data);
  std::string msg = user_error([&] { TensorBundle(prefix).read("global_step"); });
  EXPECT_TRUE(contains(msg, "data file not found")) << msg;
}

TEST(IoTfBundle, ForeignAndMalformedIndexesAreRejected) {
  EXPECT_TRUE(contains(user_error([] { parse_bundle_index("", "x.index"); }), "too short"));
  EXPECT_TRUE(contains(user_error([] { parse_bundle_index(std::string(100, 'z'), "x.index"); }), "bad magic"));
  // a valid table without the bundle header
  std::string no_header = write_sstable({{"a", "b"}});
  EXPECT_TRUE(contains(user_error([&] { parse_bundle_index(no_header, "x.index"); }), "no bundle header"));
  // an entry whose size disagrees with its shape
  auto [index, data] = write_bundle({{"w", kTfFloat, {2}, std::string(8, '\0')}});
  auto kv = read_sstable(index, "x");
  std::string entry = kv[1].second;
  auto pos = entry.find(std::string("\x28\x08", 2));  // field 5 (size) = 8
  ASSERT_NE(pos, std::string::npos);
  entry[pos + 1] = 12;
  kv[1].second = entry;
  EXPECT_TRUE(contains(user_error([&] { parse_bundle_index(write_sstable(kv), "x.index"); }), "should hold 8 bytes"));
  // a shard id beyond num_shards
  kv[1].second = entry.substr(0, pos) + std::string("\x28\x08\x18\x03", 4);
  EXPECT_TRUE(contains(user_error([&] { parse_bundle_index(write_sstable(kv), "x.index"); }), "shard 3"));
  // snappy-compressed blocks are named as such
  std::string snappy = write_sstable({{"", "\x08\x01"}});
  // the data block comes first; its trailer (type byte + masked CRC) follows its 13 bytes
  size_t block_size = 1 + 1 + 1 + 0 + 2 + 4 + 4;  // entry header, key, value, restart, count
  snappy[block_size] = 1;
  uint32_t crc = crc32c_extend(crc32c(std::string_view(snappy).substr(0, block_size)), "\x01", 1);
  std::string fixed;
  put_fixed32(fixed, crc32c_mask(crc));
  snappy.replace(block_size + 1, 4, fixed);
  EXPECT_TRUE(contains(user_error([&] { parse_bundle_index(snappy, "x.index"); }), "snappy"));
}
