// NVIDIA DeepLearningExamples .pt import on the tiny fixtures in tests/data (written by
// tests/data/make_nvidia_pt.py with Debian's python3-torch).
#include <gtest/gtest.h>

#include "bert/common/error.h"
#include "bert/io/nvidia_pt.h"
#include "bert/io/nvidia_pt_pickle.h"
#include "bert/io/nvidia_pt_zip.h"
#include "bert/io/tensorbundle_wire.h"
#include "test_util.h"

using namespace bert;
using namespace bert::io;
using bert::test::TempDir;
namespace fs = std::filesystem;

namespace {

fs::path fixture(const std::string& name) { return bert::test::source_dir() / "tests" / "data" / name; }

// The tiny config the fixture was made for, with vocab 15 (the fixture pads it to 16).
void write_config(const fs::path& path) {
  bert::test::write_text(path, R"({"vocab_size": 15, "hidden_size": 4, "num_hidden_layers": 1,
    "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16, "type_vocab_size": 2})");
}

}  // namespace

TEST(IoTfNvidia, ImportsTheZipCheckpoint) {
  TempDir dir;
  write_config(dir / "bert_config.json");
  NvidiaImportOptions opts;
  opts.config_path = dir / "bert_config.json";
  ASSERT_TRUE(is_torch_checkpoint_file(fixture("nvidia_tiny.pt")));
  ImportedWeights w = import_nvidia_checkpoint(fixture("nvidia_tiny.pt"), opts);
  ASSERT_TRUE(w.config.has_value());
  EXPECT_EQ(w.tensors.size(), 31u);  // 5 embeddings + 16 for the layer + 9 heads + tied decoder
  EXPECT_TRUE(w.unmapped.empty());
  for (const auto& [name, t] : w.tensors) {
    EXPECT_TRUE(is_known_hf_bert_name(name)) << name;
    EXPECT_EQ(name.find("module."), std::string::npos) << name;
    EXPECT_EQ(name.find("dense_act"), std::string::npos) << name;
  }
  // the other entries of the dict are reported, not loaded
  for (const char* k : {"optimizer (not model weights)", "master params (not model weights)",
                        "files (not model weights)", "epoch (not model weights)", "data_loader (not model weights)"})
    EXPECT_NE(std::find(w.skipped.begin(), w.skipped.end(), k), w.skipped.end()) << k;

  // values: tensor i of the fixture holds i + 0.001 * element index
  const torch::Tensor* emb = w.find("bert.embeddings.word_embeddings.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->sizes(), (std::vector<int64_t>{15, 4}));  // padding row dropped
  EXPECT_NEAR((*emb)[14][3].item<float>(), 0.0f + 0.001f * 59, 1e-6);
  const torch::Tensor* inter = w.find("bert.encoder.layer.0.intermediate.dense.weight");
  ASSERT_NE(inter, nullptr);
  EXPECT_EQ(inter->sizes(), (std::vector<int64_t>{16, 4}));  // PyTorch layout, not transposed
  EXPECT_NEAR((*inter)[1][0].item<float>(), 15.0f + 0.004f, 1e-5);
  EXPECT_EQ(w.find("cls.predictions.bias")->size(0), 15);
  EXPECT_EQ(w.find("cls.predictions.decoder.weight")->size(0), 15);
  EXPECT_TRUE(torch::equal(*w.find("cls.predictions.decoder.weight"), *emb));
  EXPECT_NE(w.find("bert.pooler.dense.weight"), nullptr);
  EXPECT_NE(w.find("cls.predictions.transform.dense.bias"), nullptr);
  bool trimmed_note = false;
  for (const auto& n : w.notes) trimmed_note |= n.find("16 -> 15") != std::string::npos;
  EXPECT_TRUE(trimmed_note);
}

TEST(IoTfNvidia, WithoutConfigNothingIsTrimmed) {
  ImportedWeights w = import_nvidia_checkpoint(fixture("nvidia_tiny.pt"));
  EXPECT_FALSE(w.config.has_value());
  EXPECT_EQ(w.find("bert.embeddings.word_embeddings.weight")->size(0), 16);
}

TEST(IoTfNvidia, UnreadableFilesGiveClearErrors) {
  try {
    import_nvidia_checkpoint(fixture("nvidia_tiny_legacy.pt"));
    FAIL() << "legacy format accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("legacy (pre-1.6) torch.save format"), std::string::npos) << e.what();
  }
  TempDir dir;
  bert::test::write_text(dir / "junk.pt", "definitely not a checkpoint");
  EXPECT_THROW(import_nvidia_checkpoint(dir / "junk.pt"), UserError);
  EXPECT_FALSE(is_torch_checkpoint_file(dir / "junk.pt"));
  // a zip archive cut in half
  std::string bytes = bert::test::read_text(fixture("nvidia_tiny.pt"));
  bert::test::write_text(dir / "cut.pt", bytes.substr(0, bytes.size() / 2));
  try {
    import_nvidia_checkpoint(dir / "cut.pt");
    FAIL() << "truncated file accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.pt: no zip end-of-directory record (truncated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(import_nvidia_checkpoint(dir / "missing.pt"), UserError);
}

TEST(IoTfNvidia, EveryTruncationAndFlippedByteIsAClearErrorOrHarmless) {
  std::string bytes = bert::test::read_text(fixture("nvidia_tiny.pt"));
  auto parse = [](std::string_view b) {
    ZipArchive zip(b, "x.pt");
    PtCheckpoint c = parse_torch_checkpoint(zip);
    for (const auto& [name, t] : c.tensors) zip.read(t.storage_record);  // CRC check
    return c.tensors.size();
  };
  ASSERT_EQ(parse(bytes), 31u);
  for (size_t n = 0; n < bytes.size(); n += 7) EXPECT_THROW(parse(std::string_view(bytes).substr(0, n)), UserError) << n;
  int caught = 0, harmless = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x21);
    try {
      parse(bad);
      ++harmless;  // e.g. timestamps, or records no tensor uses
    } catch (const UserError& e) {
      ++caught;
      EXPECT_EQ(std::string(e.what()).rfind("x.pt", 0), 0u) << e.what();
    }
  }
  // every byte of data.pkl and of the storages is covered by a CRC
  EXPECT_GT(caught, static_cast<int>(bytes.size() / 2));
  EXPECT_GT(harmless, 0);
}

namespace {

// A stored (uncompressed) zip of `entries`; with zip64, every size and offset in the central
// directory is 0xffffffff and lives in a ZIP64 extra field, and ZIP64 end records are written, as
// for checkpoints over 4 GB.
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries, bool zip64) {
  auto u16 = [](std::string& s, uint32_t v) { s.push_back(char(v & 0xff)), s.push_back(char((v >> 8) & 0xff)); };
  std::string out, cd;
  for (const auto& [name, data] : entries) {
    uint64_t offset = out.size();
    uint32_t crc = crc32_ieee(0, data.data(), data.size());
    put_fixed32(out, 0x04034b50);
    u16(out, 20), u16(out, 0), u16(out, 0), u16(out, 0), u16(out, 0);
    put_fixed32(out, crc);
    put_fixed32(out, static_cast<uint32_t>(data.size()));
    put_fixed32(out, static_cast<uint32_t>(data.size()));
    u16(out, static_cast<uint32_t>(name.size())), u16(out, 0);
    out += name;
    out += data;
    std::string extra;
    if (zip64) {
      u16(extra, 1), u16(extra, 24);
      put_fixed64(extra, data.size());
      put_fixed64(extra, data.size());
      put_fixed64(extra, offset);
    }
    put_fixed32(cd, 0x02014b50);
    u16(cd, 45), u16(cd, 45), u16(cd, 0), u16(cd, 0), u16(cd, 0), u16(cd, 0);
    put_fixed32(cd, crc);
    put_fixed32(cd, zip64 ? 0xffffffffu : static_cast<uint32_t>(data.size()));
    put_fixed32(cd, zip64 ? 0xffffffffu : static_cast<uint32_t>(data.size()));
    u16(cd, static_cast<uint32_t>(name.size())), u16(cd, static_cast<uint32_t>(extra.size())), u16(cd, 0);
    u16(cd, 0), u16(cd, 0);
    put_fixed32(cd, 0);
    put_fixed32(cd, zip64 ? 0xffffffffu : static_cast<uint32_t>(offset));
    cd += name;
    cd += extra;
  }
  uint64_t cd_offset = out.size();
  out += cd;
  if (zip64) {
    uint64_t z = out.size();
    put_fixed32(out, 0x06064b50);
    put_fixed64(out, 44);
    u16(out, 45), u16(out, 45);
    put_fixed32(out, 0), put_fixed32(out, 0);
    put_fixed64(out, entries.size()), put_fixed64(out, entries.size());
    put_fixed64(out, cd.size()), put_fixed64(out, cd_offset);
    put_fixed32(out, 0x07064b50);
    put_fixed32(out, 0);
    put_fixed64(out, z);
    put_fixed32(out, 1);
  }
  put_fixed32(out, 0x06054b50);
  u16(out, 0), u16(out, 0);
  u16(out, zip64 ? 0xffff : static_cast<uint32_t>(entries.size()));
  u16(out, zip64 ? 0xffff : static_cast<uint32_t>(entries.size()));
  put_fixed32(out, zip64 ? 0xffffffffu : static_cast<uint32_t>(cd.size()));
  put_fixed32(out, zip64 ? 0xffffffffu : static_cast<uint32_t>(cd_offset));
  u16(out, 0);
  return out;
}

}  // namespace

TEST(IoTfNvidia, Zip64ArchivesRead) {
  std::string bytes = bert::test::read_text(fixture("nvidia_tiny.pt"));
  ZipArchive orig(bytes, "nvidia_tiny.pt");
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& n : orig.names()) entries.emplace_back(n, std::string(orig.read(n)));
  for (bool zip64 : {false, true}) {
    std::string z = make_zip(entries, zip64);
    ZipArchive zip(z, "rebuilt.pt");
    EXPECT_EQ(zip.names(), orig.names());
    PtCheckpoint c = parse_torch_checkpoint(zip);
    EXPECT_EQ(c.tensors.size(), 31u) << zip64;
    TempDir dir;
    bert::test::write_text(dir / "rebuilt.pt", z);
    ImportedWeights w = import_nvidia_checkpoint(dir / "rebuilt.pt");
    EXPECT_EQ(w.tensors.size(), 31u);
  }
  // a compressed (deflate) entry is refused by name
  std::string z = make_zip({{"a/data.pkl", "x"}}, false);
  auto cd = z.find(std::string("PK\x01\x02", 4));
  z[cd + 10] = 8;
  try {
    ZipArchive bad(z, "deflated.pt");
    FAIL() << "compressed entry accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is compressed"), std::string::npos) << e.what();
  }
}
