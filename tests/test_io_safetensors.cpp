// safetensors: round trip of every dtype, byte layout, and corrupt files giving clear UserErrors.
#include <torch/torch.h>

#include <cstring>
#include <random>

#include "bert/common/error.h"
#include "bert/io/safetensors.h"
#include "test_util.h"

namespace {

using namespace bert;
using io::NamedTensors;

NamedTensors every_dtype() {
  torch::manual_seed(11);
  NamedTensors t;
  t.emplace_back("f64", torch::randn({2, 3}, torch::kFloat64));
  t.emplace_back("f32", torch::randn({4}, torch::kFloat32));
  t.emplace_back("f16", torch::randn({3, 1}).to(torch::kFloat16));
  t.emplace_back("bf16", torch::randn({2, 2, 2}).to(torch::kBFloat16));
  t.emplace_back("i64", torch::tensor({-(int64_t(1) << 40), int64_t(7)}, torch::kInt64));
  t.emplace_back("i32", torch::tensor({-5, 6, 70000}, torch::kInt32));
  t.emplace_back("i16", torch::tensor({-300, 300}, torch::kInt16));
  t.emplace_back("i8", torch::tensor({-128, 127}, torch::kInt8));
  t.emplace_back("u8", torch::tensor({0, 255}, torch::kUInt8));
  t.emplace_back("bool", torch::tensor({true, false, true}));
  t.emplace_back("scalar", torch::tensor(3.5f));
  t.emplace_back("empty", torch::zeros({0, 5}));
  t.emplace_back("strided", torch::arange(12, torch::kFloat32).view({3, 4}).t());  // non-contiguous
  return t;
}

TEST(IoSafetensors, RoundTripEveryDtype) {
  test::TempDir dir;
  auto in = every_dtype();
  io::save_safetensors(dir / "x.safetensors", in, {{"format", "pt"}, {"step", "12"}});
  auto f = io::load_safetensors(dir / "x.safetensors");
  ASSERT_EQ(f.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(f.tensors[i].first, in[i].first);
    EXPECT_EQ(f.tensors[i].second.scalar_type(), in[i].second.scalar_type()) << in[i].first;
    EXPECT_TRUE(torch::equal(f.tensors[i].second, in[i].second)) << in[i].first;
  }
  EXPECT_EQ(f.metadata.at("step"), "12");
  // No temporary left behind; in-memory parse of the same bytes agrees.
  size_t files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir.path)) ++files;
  EXPECT_EQ(files, 1u);
  auto mem = io::parse_safetensors(test::read_text(dir / "x.safetensors"));
  EXPECT_EQ(mem.tensors.size(), in.size());
  auto h = io::read_safetensors_header(dir / "x.safetensors");
  EXPECT_EQ(h.entries.size(), in.size());
  EXPECT_EQ(h.entries[3].dtype, "BF16");
}

TEST(IoSafetensors, ByteLayoutIsTheFormat) {
  auto bytes = io::serialize_safetensors({{"a", torch::tensor({1.0f, 2.0f})}, {"b", torch::tensor({int16_t(3)})}});
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  auto header = bytes.substr(8, n);
  EXPECT_EQ(header.rfind("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},", 0), 0u) << header;
  EXPECT_NE(header.find("\"b\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[8,10]}"), std::string::npos);
  ASSERT_EQ(bytes.size(), 8 + n + 10);
  float two;
  std::memcpy(&two, bytes.data() + 8 + n + 4, 4);
  EXPECT_EQ(two, 2.0f);
}

TEST(IoSafetensors, WriterRejectsBadInput) {
  auto t = torch::ones({2});
  EXPECT_THROW(io::serialize_safetensors({{"a", t}, {"a", t}}), UserError);
  EXPECT_THROW(io::serialize_safetensors({{"", t}}), UserError);
  EXPECT_THROW(io::serialize_safetensors({{"a", t}, {"b", t}}), UserError);  // shared storage
  EXPECT_THROW(io::serialize_safetensors({{"c", torch::ones({2}, torch::kComplexFloat)}}), UserError);
}

// Build a file from a header string and a data section.
std::string file_with(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

void expect_rejected(const std::string& bytes, const std::string& fragment) {
  try {
    io::parse_safetensors(bytes, "bad.safetensors");
    ADD_FAILURE() << "accepted a corrupt file; expected: " << fragment;
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(IoSafetensors, CorruptFilesGiveClearErrors) {
  const std::string good = io::serialize_safetensors({{"w", torch::ones({2, 2})}, {"b", torch::zeros({2})}});
  // every truncation of a good file is rejected
  for (size_t len : {size_t(0), size_t(5), size_t(8), size_t(20), good.size() - 1})
    EXPECT_THROW(io::parse_safetensors(good.substr(0, len), "t"), UserError) << len;
  expect_rejected(good.substr(0, 7), "shorter than the 8-byte");
  expect_rejected(good.substr(0, good.size() - 4), "outside the data section");

  std::string huge = good;
  uint64_t big = uint64_t(1) << 62;
  std::memcpy(huge.data(), &big, 8);
  expect_rejected(huge, "exceeds the 100 MB limit");
  uint64_t past = good.size();
  std::memcpy(huge.data(), &past, 8);
  expect_rejected(huge, "beyond the end");

  const std::string d8(8, '\0');
  expect_rejected(file_with("{\"a\": {\"dtype\": \"F32\", ", d8), "not valid JSON");
  expect_rejected(file_with("[1, 2]", ""), "not a JSON object");
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", d8),
                  "appears twice");
  expect_rejected(file_with(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", d8), "unsupported dtype 'Q7'");
  // wrong dtype size: 2 x F64 needs 16 bytes, the range has 8
  expect_rejected(file_with(R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}})", d8), "need 16");
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8), "non-negative");
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", d8),
                  "too large");
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", d8), "end before begin");
  // zero elements but absurd dimensions: either a valid empty tensor or a clear error
  try {
    auto f = io::parse_safetensors(file_with(R"({"z":{"dtype":"F32","shape":[4611686018427387904,0],"data_offsets":[0,0]}})", ""), "z");
    EXPECT_EQ(f.tensors.at(0).second.numel(), 0);
  } catch (const UserError&) {
  }
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[2]}})", d8), "data_offsets");
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", d8), "unknown field");
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                            std::string(12, '\0')),
                  "overlapping");
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0')), "hole");
  expect_rejected(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(12, '\0')),
                  "after the last tensor");
  expect_rejected(file_with(R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x07", 2)),
                  "0 or 1");
  expect_rejected(file_with(R"({"__metadata__":{"k":5}})", ""), "not a string");
}

// Every truncation and a few thousand random byte mutations of a valid file: each one either
// parses or is a UserError; nothing else escapes (no crash, no json/c10 exception).
TEST(IoSafetensors, MutatedFilesNeverEscapeAsAnythingButUserError) {
  NamedTensors in = {{"w", torch::arange(6, torch::kFloat32).view({2, 3})},
                     {"flag", torch::tensor({true, false})},
                     {"ids", torch::tensor({1, 2, 3}, torch::kInt64)}};
  const std::string good = io::serialize_safetensors(in, {{"format", "pt"}});
  auto attempt = [](const std::string& bytes) {
    try {
      io::parse_safetensors(bytes, "m");
      return 1;
    } catch (const UserError&) {
      return 0;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "non-UserError escaped: " << e.what();
      return 2;
    }
  };
  int parsed = 0;
  for (size_t len = 0; len < good.size(); ++len) parsed += attempt(good.substr(0, len));
  EXPECT_EQ(parsed, 0) << "a truncated file parsed";
  std::mt19937 rng(1234);
  const char interesting[] = {'0', '9', '"', ',', ':', '[', ']', '{', '}', '-', 'e', '\0', '\xff', ' '};
  int ok = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string m = good;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % m.size();
      m[at] = (rng() % 2) ? interesting[rng() % sizeof interesting] : static_cast<char>(rng() % 256);
    }
    ok += attempt(m) == 1;
  }
  EXPECT_GT(ok, 0);  // some mutations (e.g. in the data section) are still valid files
}

TEST(IoSafetensors, CorruptFileOnDiskNamesTheFile) {
  test::TempDir dir;
  test::write_text(dir / "cut.safetensors", io::serialize_safetensors({{"w", torch::ones({64})}}).substr(0, 100));
  try {
    io::load_safetensors(dir / "cut.safetensors");
    ADD_FAILURE() << "truncated file accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_THROW(io::load_safetensors(dir / "absent.safetensors"), UserError);
  test::write_text(dir / "tiny.safetensors", "abc");
  EXPECT_THROW(io::read_safetensors_header(dir / "tiny.safetensors"), UserError);
}

}  // namespace
