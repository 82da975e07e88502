// HDF5 layer: schema, dtypes and shapes of written files; round trips with and without masking;
// MLPerf's int16 variant read through conversion; clear errors for broken files.
#include <hdf5.h>

#include <array>
#include <chrono>
#include <thread>

#include "bert/common/error.h"
#include "bert/data/hdf5_io.h"
#include "test_util.h"

using namespace bert;
using namespace bert::data;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

PretrainRows sample_rows(int64_t n, int64_t L, int64_t P) {
  PretrainRows r;
  r.resize(n, L, P);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < L; ++t) {
      bool real = t < 3 + i % (L - 3);
      r.input_ids[i * L + t] = real ? static_cast<int32_t>(1000 + i * 7 + t) : 0;
      r.input_mask[i * L + t] = real;
      r.segment_ids[i * L + t] = real && t > 2;
    }
    for (int64_t k = 0; k < P; ++k) {
      r.masked_lm_positions[i * P + k] = k < 2 ? static_cast<int32_t>(k + 1) : 0;
      r.masked_lm_ids[i * P + k] = k < 2 ? static_cast<int32_t>(20000 + i + k) : 0;
    }
    r.next_sentence_labels[i] = static_cast<int32_t>(i % 2);
  }
  return r;
}

// The file type and dims of one dataset, read with the raw C API.
struct DsetInfo {
  bool exists = false;
  size_t type_size = 0;
  bool is_signed = false;
  std::vector<hsize_t> dims;
};

DsetInfo inspect(const fs::path& file, const char* name) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  DsetInfo info;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return info;
  if (H5Lexists(f, name, H5P_DEFAULT) > 0) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    hid_t s = H5Dget_space(d);
    info.exists = true;
    info.type_size = H5Tget_size(t);
    info.is_signed = H5Tget_sign(t) == H5T_SGN_2;
    info.dims.resize(H5Sget_simple_extent_ndims(s));
    H5Sget_simple_extent_dims(s, info.dims.data(), nullptr);
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
  }
  H5Fclose(f);
  return info;
}

// Writes a dataset of `type` from int32 values (HDF5 converts), for hand-made files.
void raw_dataset(hid_t f, const char* name, hid_t type, std::vector<hsize_t> dims, const std::vector<int32_t>& v) {
  hid_t s = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(d);
  H5Sclose(s);
}

// A hand-made file with the given datasets; `skip` is left out, `nsp_rows` overrides N for labels.
void make_file(const fs::path& p, hid_t ids_type, int64_t N, int64_t L, int64_t P, const std::string& skip = "",
               int64_t nsp_rows = -1, bool rank3_mask = false) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  PretrainRows r = sample_rows(N, L, P);
  hsize_t n = N, l = L, pp = P;
  if (skip != "input_ids") raw_dataset(f, "input_ids", ids_type, {n, l}, r.input_ids);
  if (skip != "input_mask") {
    if (rank3_mask)
      raw_dataset(f, "input_mask", H5T_STD_I8LE, {n, l, 1}, r.input_mask);
    else
      raw_dataset(f, "input_mask", H5T_STD_I8LE, {n, l}, r.input_mask);
  }
  if (skip != "segment_ids") raw_dataset(f, "segment_ids", H5T_STD_I8LE, {n, l}, r.segment_ids);
  if (skip != "masked_lm_positions") raw_dataset(f, "masked_lm_positions", ids_type, {n, pp}, r.masked_lm_positions);
  if (skip != "masked_lm_ids") raw_dataset(f, "masked_lm_ids", ids_type, {n, pp}, r.masked_lm_ids);
  std::vector<int32_t> nsp(nsp_rows < 0 ? N : nsp_rows, 1);
  if (skip != "next_sentence_labels")
    raw_dataset(f, "next_sentence_labels", H5T_STD_I8LE, {static_cast<hsize_t>(nsp.size())}, nsp);
  H5Fclose(f);
}

std::string error_of(const fs::path& p) {
  try {
    Hdf5Reader r(p);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(DataHdf5, WritesNvidiaSchemaDtypesAndShapes) {
  TempDir tmp;
  fs::path p = tmp / "a.hdf5";
  const int64_t N = 10, L = 16, P = 4;
  Hdf5Writer w(p, N, L, P, true, false);
  w.write(0, sample_rows(N, L, P));
  w.commit();
  struct Want {
    const char* name;
    size_t size;
    std::vector<hsize_t> dims;
  };
  for (const Want& want : {Want{"input_ids", 4, {10, 16}}, Want{"input_mask", 1, {10, 16}},
                           Want{"segment_ids", 1, {10, 16}}, Want{"masked_lm_positions", 4, {10, 4}},
                           Want{"masked_lm_ids", 4, {10, 4}}, Want{"next_sentence_labels", 1, {10}}}) {
    DsetInfo d = inspect(p, want.name);
    ASSERT_TRUE(d.exists) << want.name;
    EXPECT_EQ(d.type_size, want.size) << want.name;
    EXPECT_TRUE(d.is_signed) << want.name;
    EXPECT_EQ(d.dims, want.dims) << want.name;
  }
  for (const auto& e : fs::directory_iterator(tmp.path)) EXPECT_EQ(e.path().filename(), "a.hdf5");
}

TEST(DataHdf5, RoundTripInBlocksAndRanges) {
  TempDir tmp;
  fs::path p = tmp / "b.hdf5";
  const int64_t N = 9, L = 8, P = 3;
  PretrainRows all = sample_rows(N, L, P);
  {
    Hdf5Writer w(p, N, L, P, true, true);  // gzip
    // two blocks: rows [0,5) and [5,9)
    PretrainRows a, b;
    a.resize(5, L, P);
    b.resize(4, L, P);
    std::copy(all.input_ids.begin(), all.input_ids.begin() + 5 * L, a.input_ids.begin());
    std::copy(all.input_mask.begin(), all.input_mask.begin() + 5 * L, a.input_mask.begin());
    std::copy(all.segment_ids.begin(), all.segment_ids.begin() + 5 * L, a.segment_ids.begin());
    std::copy(all.masked_lm_positions.begin(), all.masked_lm_positions.begin() + 5 * P, a.masked_lm_positions.begin());
    std::copy(all.masked_lm_ids.begin(), all.masked_lm_ids.begin() + 5 * P, a.masked_lm_ids.begin());
    std::copy(all.next_sentence_labels.begin(), all.next_sentence_labels.begin() + 5, a.next_sentence_labels.begin());
    std::copy(all.input_ids.begin() + 5 * L, all.input_ids.end(), b.input_ids.begin());
    std::copy(all.input_mask.begin() + 5 * L, all.input_mask.end(), b.input_mask.begin());
    std::copy(all.segment_ids.begin() + 5 * L, all.segment_ids.end(), b.segment_ids.begin());
    std::copy(all.masked_lm_positions.begin() + 5 * P, all.masked_lm_positions.end(), b.masked_lm_positions.begin());
    std::copy(all.masked_lm_ids.begin() + 5 * P, all.masked_lm_ids.end(), b.masked_lm_ids.begin());
    std::copy(all.next_sentence_labels.begin() + 5, all.next_sentence_labels.end(), b.next_sentence_labels.begin());
    w.write(0, a);
    w.write(5, b);
    w.commit();
  }
  Hdf5Reader r(p);
  EXPECT_EQ(r.size(), N);
  EXPECT_EQ(r.seq_length(), L);
  EXPECT_EQ(r.max_predictions(), P);
  EXPECT_TRUE(r.has_masking());
  PretrainRows got;
  r.read(0, N, got);
  EXPECT_EQ(got.input_ids, all.input_ids);
  EXPECT_EQ(got.input_mask, all.input_mask);
  EXPECT_EQ(got.segment_ids, all.segment_ids);
  EXPECT_EQ(got.masked_lm_positions, all.masked_lm_positions);
  EXPECT_EQ(got.masked_lm_ids, all.masked_lm_ids);
  EXPECT_EQ(got.next_sentence_labels, all.next_sentence_labels);
  r.read(3, 7, got);
  EXPECT_EQ(got.rows, 4);
  EXPECT_EQ(got.input_ids[0], all.input_ids[3 * L]);
  EXPECT_EQ(got.next_sentence_labels[0], all.next_sentence_labels[3]);
  EXPECT_THROW(r.read(5, 10, got), UserError);
}

TEST(DataHdf5, NoMaskingFilesHaveNoMaskedLmDatasets) {
  TempDir tmp;
  fs::path p = tmp / "c.hdf5";
  Hdf5Writer w(p, 3, 8, 0, false, false);
  w.write(0, sample_rows(3, 8, 0));
  w.commit();
  EXPECT_FALSE(inspect(p, "masked_lm_positions").exists);
  EXPECT_FALSE(inspect(p, "masked_lm_ids").exists);
  Hdf5Reader r(p);
  EXPECT_FALSE(r.has_masking());
  EXPECT_EQ(r.max_predictions(), 0);
  PretrainRows got;
  r.read(0, 3, got);
  EXPECT_EQ(got.input_ids, sample_rows(3, 8, 0).input_ids);
}

TEST(DataHdf5, ReadsMlperfInt16VariantAndOtherWidths) {
  TempDir tmp;
  for (hid_t type : {H5T_STD_I16LE, H5T_STD_I64LE, H5T_STD_U16LE}) {
    fs::path p = tmp / "m.hdf5";
    make_file(p, type, 6, 12, 5);
    Hdf5Reader r(p);
    EXPECT_EQ(r.size(), 6);
    EXPECT_EQ(r.seq_length(), 12);
    EXPECT_EQ(r.max_predictions(), 5);
    PretrainRows got, want = sample_rows(6, 12, 5);
    r.read(0, 6, got);
    EXPECT_EQ(got.input_ids, want.input_ids);
    EXPECT_EQ(got.masked_lm_ids, want.masked_lm_ids);
    EXPECT_EQ(got.masked_lm_positions, want.masked_lm_positions);
    EXPECT_EQ(got.input_mask, want.input_mask);
  }
}

TEST(DataHdf5, ErrorsNameFileAndDataset) {
  TempDir tmp;
  fs::path p = tmp / "broken.hdf5";
  make_file(p, H5T_STD_I32LE, 4, 8, 2, "segment_ids");
  std::string e = error_of(p);
  EXPECT_NE(e.find("broken.hdf5"), std::string::npos) << e;
  EXPECT_NE(e.find("segment_ids"), std::string::npos) << e;

  make_file(p, H5T_STD_I32LE, 4, 8, 2, "", /*nsp_rows=*/3);
  e = error_of(p);
  EXPECT_NE(e.find("next_sentence_labels"), std::string::npos) << e;
  EXPECT_NE(e.find("3 rows"), std::string::npos) << e;

  make_file(p, H5T_STD_I32LE, 4, 8, 2, "", -1, /*rank3_mask=*/true);
  e = error_of(p);
  EXPECT_NE(e.find("input_mask"), std::string::npos) << e;
  EXPECT_NE(e.find("rank"), std::string::npos) << e;

  make_file(p, H5T_STD_I32LE, 4, 8, 2, "masked_lm_ids");
  e = error_of(p);
  EXPECT_NE(e.find("masked_lm_ids"), std::string::npos) << e;

  bert::test::write_text(p, "this is not an HDF5 file at all");
  e = error_of(p);
  EXPECT_NE(e.find("not an HDF5 file"), std::string::npos) << e;

  e = error_of(tmp / "missing.hdf5");
  EXPECT_NE(e.find("not found"), std::string::npos) << e;
}

TEST(DataHdf5, UncommittedWriterLeavesNoFile) {
  TempDir tmp;
  fs::path p = tmp / "never.hdf5";
  {
    Hdf5Writer w(p, 4, 8, 2, true, false);
    w.write(0, sample_rows(2, 8, 2));
  }  // destroyed without commit, as after an error
  EXPECT_FALSE(fs::exists(p));
  EXPECT_TRUE(fs::is_empty(tmp.path));
}

TEST(DataHdf5, SameRowsGiveSameBytes) {
  TempDir tmp;
  for (const char* name : {"x.hdf5", "y.hdf5"}) {
    Hdf5Writer w(tmp / name, 5, 8, 2, true, true);
    w.write(0, sample_rows(5, 8, 2));
    w.commit();
    if (std::string(name) == "x.hdf5") std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  }
  EXPECT_EQ(bert::test::read_text(tmp / "x.hdf5"), bert::test::read_text(tmp / "y.hdf5"));
}

namespace {

PretrainRows slice_rows(const PretrainRows& all, int64_t begin, int64_t n) {
  const int64_t L = all.seq_length, P = all.max_predictions;
  PretrainRows r;
  r.resize(n, L, P);
  std::copy_n(all.input_ids.begin() + begin * L, n * L, r.input_ids.begin());
  std::copy_n(all.input_mask.begin() + begin * L, n * L, r.input_mask.begin());
  std::copy_n(all.segment_ids.begin() + begin * L, n * L, r.segment_ids.begin());
  std::copy_n(all.masked_lm_positions.begin() + begin * P, n * P, r.masked_lm_positions.begin());
  std::copy_n(all.masked_lm_ids.begin() + begin * P, n * P, r.masked_lm_ids.begin());
  std::copy_n(all.next_sentence_labels.begin() + begin, n, r.next_sentence_labels.begin());
  return r;
}

// Filters declared on a dataset, in pipeline order.
std::vector<H5Z_filter_t> filters_of(const fs::path& file, const char* name) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  std::vector<H5Z_filter_t> out;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t pl = H5Dget_create_plist(d);
  for (int i = 0; i < H5Pget_nfilters(pl); ++i) {
    unsigned flags = 0;
    size_t nelmts = 0;
    unsigned int cd[8];
    char fname[64];
    out.push_back(H5Pget_filter2(pl, static_cast<unsigned>(i), &flags, &nelmts, cd, sizeof fname, fname, nullptr));
  }
  H5Pclose(pl);
  H5Dclose(d);
  H5Fclose(f);
  return out;
}

}  // namespace

// --compress encodes whole chunks itself (shuffle + deflate, on the calling thread) and stores
// them with H5Dwrite_chunk; HDF5's standard pipeline must decode them to exactly the rows
// written, including the zero-padded last chunk, every byte of wide values, and files where
// some blocks took the direct path and others went through the pipeline.
TEST(DataHdf5, CompressedChunksEncodedByUsDecodeExactly) {
  TempDir tmp;
  const int64_t N = 2 * 4096 + 1000, L = 16, P = 4;
  PretrainRows all = sample_rows(N, L, P);
  uint64_t x = 88172645463325252ull;  // xorshift: values in every byte of an int32, negatives too
  for (auto& v : all.input_ids) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = static_cast<int32_t>(x);
  }
  for (auto& v : all.masked_lm_ids) v = static_cast<int32_t>(v * 40503u);
  auto write = [&](const fs::path& p, bool compress, const std::vector<int64_t>& cuts) {
    Hdf5Writer w(p, N, L, P, true, compress);
    for (size_t i = 0; i + 1 < cuts.size(); ++i) w.write(cuts[i], slice_rows(all, cuts[i], cuts[i + 1] - cuts[i]));
    w.commit();
  };
  write(tmp / "direct.hdf5", true, {0, 4096, 8192, N});         // whole chunks, last one partial
  write(tmp / "direct2.hdf5", true, {0, 4096, 8192, N});
  write(tmp / "mixed.hdf5", true, {0, 4096, 5000, 6000, N});    // one direct chunk, then the pipeline
  write(tmp / "plain.hdf5", false, {0, 4096, 8192, N});
  for (const char* name : {"direct.hdf5", "mixed.hdf5", "plain.hdf5"}) {
    SCOPED_TRACE(name);
    Hdf5Reader r(tmp / name);
    PretrainRows got;
    r.read(0, N, got);
    EXPECT_EQ(got.input_ids, all.input_ids);
    EXPECT_EQ(got.input_mask, all.input_mask);
    EXPECT_EQ(got.segment_ids, all.segment_ids);
    EXPECT_EQ(got.masked_lm_positions, all.masked_lm_positions);
    EXPECT_EQ(got.masked_lm_ids, all.masked_lm_ids);
    EXPECT_EQ(got.next_sentence_labels, all.next_sentence_labels);
    r.read(8190, 8200, got);  // across the chunk border
    EXPECT_EQ(got.input_ids[2 * L + 3], all.input_ids[8192 * L + 3]);
  }
  // The standard pipeline is declared, so any HDF5 reader (h5py, NVIDIA's loader) decodes it.
  const std::vector<H5Z_filter_t> pipeline{H5Z_FILTER_SHUFFLE, H5Z_FILTER_DEFLATE};
  for (const char* d : {"input_ids", "input_mask", "masked_lm_ids", "next_sentence_labels"})
    EXPECT_EQ(filters_of(tmp / "direct.hdf5", d), pipeline) << d;
  EXPECT_TRUE(filters_of(tmp / "plain.hdf5", "input_ids").empty());
  EXPECT_EQ(bert::test::read_text(tmp / "direct.hdf5"), bert::test::read_text(tmp / "direct2.hdf5"));
  EXPECT_LT(fs::file_size(tmp / "direct.hdf5"), fs::file_size(tmp / "plain.hdf5"));
}
