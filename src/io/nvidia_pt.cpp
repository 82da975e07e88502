// NVIDIA DeepLearningExamples .pt checkpoints -> tensors under HF names.
#include "bert/io/nvidia_pt.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/config/run_config.h"
#include "bert/io/nvidia_pt_pickle.h"
#include "bert/io/nvidia_pt_zip.h"
#include "bert/io/tf_names.h"

namespace bert::io {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// The names whose first dimension is the vocabulary.
bool is_vocab_tensor(const std::string& hf_name) {
  return hf_name == "bert.embeddings.word_embeddings.weight" || hf_name == "cls.predictions.decoder.weight" ||
         hf_name == "cls.predictions.bias" || hf_name == "cls.predictions.decoder.bias";
}

c10::ScalarType torch_dtype(PtElem e) {
  switch (e) {
    case PtElem::Float32: return torch::kFloat32;
    case PtElem::Float64: return torch::kFloat64;
    case PtElem::Float16: return torch::kFloat16;
    case PtElem::BFloat16: return torch::kBFloat16;
    case PtElem::Int64: return torch::kInt64;
    case PtElem::Int32: return torch::kInt32;
    case PtElem::Int16: return torch::kInt16;
    case PtElem::Int8: return torch::kInt8;
    case PtElem::UInt8: return torch::kUInt8;
    default: return torch::kBool;
  }
}

// A read-only memory map of a whole file (checkpoints can be several GB).
class MappedFile {
 public:
  explicit MappedFile(const fs::path& path) {
    require_file(path, "PyTorch checkpoint");
    fd_ = ::open(path.c_str(), O_RDONLY);
    if (fd_ < 0) throw UserError("cannot open " + path.string() + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw UserError("cannot stat " + path.string());
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p == MAP_FAILED) throw UserError("cannot map " + path.string() + ": " + std::strerror(errno));
      data_ = static_cast<const char*>(p);
    }
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {data_ ? data_ : "", size_}; }

 private:
  int fd_ = -1;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

std::string nvidia_to_hf_name(const std::string& key) {
  std::string k = key;
  while (starts_with(k, "module.")) k = k.substr(7);
  replace_all(k, ".dense_act.", ".dense.");
  if (ends_with(k, "LayerNorm.gamma")) k = k.substr(0, k.size() - 5) + "weight";
  if (ends_with(k, "LayerNorm.beta")) k = k.substr(0, k.size() - 4) + "bias";
  if (starts_with(k, "embeddings.") || starts_with(k, "encoder.") || starts_with(k, "pooler.")) k = "bert." + k;
  return k;
}

bool is_known_hf_bert_name(const std::string& hf_name) {
  return hf_name == "cls.predictions.decoder.weight" || hf_name == "cls.predictions.decoder.bias" ||
         hf_to_tf_name(hf_name).has_value();
}

ImportedWeights map_nvidia_state_dict(std::vector<std::pair<std::string, torch::Tensor>> state_dict,
                                      std::optional<int64_t> vocab_size) {
  ImportedWeights out;
  int64_t renamed = 0;
  for (auto& [key, t] : state_dict) {
    std::string name = nvidia_to_hf_name(key);
    if (name == "bert.embeddings.position_ids") {  // an index buffer, not a weight
      out.skipped.push_back(key + " (buffer)");
      continue;
    }
    if (!is_known_hf_bert_name(name)) {
      out.unmapped.push_back(key);
      continue;
    }
    if (name != key) ++renamed;
    if (vocab_size && is_vocab_tensor(name) && t.dim() >= 1) {
      int64_t rows = t.size(0), v = *vocab_size;
      if (rows > v && rows % 8 == 0 && rows - v < 8) {
        out.notes.push_back(name + ": dropped " + std::to_string(rows - v) + " vocabulary padding rows (" +
                            std::to_string(rows) + " -> " + std::to_string(v) + ")");
        t = t.narrow(0, 0, v).clone();
      }
    }
    out.tensors.emplace_back(name, t.contiguous());
  }
  if (renamed) out.notes.push_back("renamed " + std::to_string(renamed) + " NVIDIA keys to HF names");
  return out;
}

bool is_torch_checkpoint_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {0, 0, 0, 0};
  in.read(magic, 4);
  return (magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4) ||
         static_cast<unsigned char>(magic[0]) == 0x80;
}

ImportedWeights import_nvidia_checkpoint(const fs::path& path, const NvidiaImportOptions& opts) {
  MappedFile file(path);
  std::string_view bytes = file.bytes();
  if (bytes.size() < 4 || bytes.substr(0, 4) != std::string_view("PK\x03\x04", 4)) {
    if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80)
      throw UserError("cannot read " + path.string() + ": it uses the legacy (pre-1.6) torch.save format; "
                      "re-save it in Python with torch.save(torch.load(path), new_path)");
    throw UserError(path.string() + " is not a PyTorch checkpoint (expected a torch.save zip archive)");
  }
  ZipArchive zip(bytes, path.string());
  PtCheckpoint ckpt = parse_torch_checkpoint(zip);
  if (ckpt.tensors.empty())
    throw UserError(path.string() + " holds no tensors" + (ckpt.nested ? " under 'model'" : "") +
                    "; expected torch.save({'model': state_dict})");

  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  std::set<std::string> verified;  // records already CRC-checked (tensors may share a storage)
  for (const auto& [name, pt] : ckpt.tensors) {
    std::string_view storage = zip.read(pt.storage_record, verified.insert(pt.storage_record).second);
    // copy only the elements this tensor's view reaches, then lay it out contiguously
    int64_t span = pt_view_span(pt);
    size_t elem = pt_elem_size(pt.elem);
    torch::Tensor flat = torch::empty({span}, torch::TensorOptions().dtype(torch_dtype(pt.elem)));
    if (span > 0)
      std::memcpy(flat.data_ptr(), storage.data() + static_cast<size_t>(pt.offset) * elem, static_cast<size_t>(span) * elem);
    tensors.emplace_back(name, flat.as_strided(pt.sizes, pt.strides, 0).clone(at::MemoryFormat::Contiguous));
  }

  fs::path config = opts.config_path;
  if (config.empty() && fs::exists(path.parent_path() / "bert_config.json")) config = path.parent_path() / "bert_config.json";
  std::optional<ModelConfig> cfg;
  if (!config.empty()) cfg = load_model_config(config);
  ImportedWeights out = map_nvidia_state_dict(std::move(tensors), cfg ? std::optional<int64_t>(cfg->vocab_size) : std::nullopt);
  out.config = cfg;
  for (auto it = ckpt.other_keys.rbegin(); it != ckpt.other_keys.rend(); ++it)
    out.skipped.insert(out.skipped.begin(), *it + " (not model weights)");
  for (const auto& k : ckpt.non_tensors) out.skipped.push_back(k + " (not a tensor)");
  return out;
}

}  // namespace bert::io
