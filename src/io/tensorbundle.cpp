// TensorBundle: locate a TensorFlow checkpoint on disk and read its variables as tensors.
#include "bert/io/tensorbundle.h"

#include <algorithm>
#include <fstream>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"

namespace bert::io {

namespace {

fs::path index_of(const fs::path& prefix) { return fs::path(prefix.string() + ".index"); }

// model_checkpoint_path: "model.ckpt-1000" from a TensorFlow `checkpoint` state file, or "".
std::string state_file_checkpoint(const fs::path& state) {
  for (const auto& line : split(read_file(state), '\n')) {
    std::string t = trim(line);
    if (!starts_with(t, "model_checkpoint_path:")) continue;
    auto a = t.find('"'), b = t.rfind('"');
    if (a != std::string::npos && b > a) return t.substr(a + 1, b - a - 1);
  }
  return "";
}

}  // namespace

fs::path resolve_tf_checkpoint_prefix(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "checkpoint")) {
      std::string name = state_file_checkpoint(path / "checkpoint");
      if (!name.empty()) {
        fs::path p = fs::path(name).is_absolute() ? fs::path(name) : path / fs::path(name).filename();
        if (fs::exists(index_of(p))) return p;
      }
    }
    std::vector<fs::path> found;
    for (const auto& de : fs::directory_iterator(path, ec))
      if (de.path().extension() == ".index") found.push_back(de.path());
    if (found.size() == 1) return found[0].parent_path() / found[0].stem();
    if (found.empty()) throw UserError("no TensorFlow checkpoint (*.index) in directory " + path.string());
    std::sort(found.begin(), found.end());
    std::vector<std::string> names;
    for (const auto& f : found) names.push_back(f.filename().string());
    throw UserError("directory " + path.string() + " holds several checkpoints (" + join(names, ", ") +
                    "); pass the one you want, e.g. " + (path / found.back().stem()).string());
  }
  if (path.extension() == ".index" && fs::exists(path)) return path.parent_path() / path.stem();
  if (fs::exists(index_of(path))) return path;
  std::string s = path.string();
  auto data = s.find(".data-");
  if (data != std::string::npos && fs::exists(index_of(s.substr(0, data)))) return s.substr(0, data);
  throw UserError("TensorFlow checkpoint not found: " + path.string() + " (expected " + index_of(path).string() +
                  " and its .data-* files)");
}

bool is_tf_checkpoint(const fs::path& path) {
  try {
    resolve_tf_checkpoint_prefix(path);
    return true;
  } catch (const UserError&) {
    return false;
  }
}

c10::ScalarType torch_dtype_for_tf(int dtype, const std::string& what) {
  switch (dtype) {
    case kTfFloat: return torch::kFloat32;
    case kTfDouble: return torch::kFloat64;
    case kTfInt32: return torch::kInt32;
    case kTfUInt8: return torch::kUInt8;
    case kTfInt16: return torch::kInt16;
    case kTfInt8: return torch::kInt8;
    case kTfInt64: return torch::kInt64;
    case kTfBool: return torch::kBool;
    case kTfBFloat16: return torch::kBFloat16;
    case kTfHalf: return torch::kFloat16;
    default:
      throw UserError(what + " has dtype " + tf_dtype_name(dtype) + ", which cannot be loaded as a tensor");
  }
}

TensorBundle::TensorBundle(const fs::path& path) : prefix_(resolve_tf_checkpoint_prefix(path)) {
  fs::path index = index_of(prefix_);
  index_ = parse_bundle_index(read_file(index), index.string());
}

const BundleEntry* TensorBundle::find(const std::string& name) const {
  auto it = std::lower_bound(index_.entries.begin(), index_.entries.end(), name,
                             [](const BundleEntry& e, const std::string& n) { return e.name < n; });
  return it != index_.entries.end() && it->name == name ? &*it : nullptr;
}

torch::Tensor TensorBundle::read(const std::string& name) const {
  const BundleEntry* e = find(name);
  if (!e) throw UserError("variable '" + name + "' not found in TensorFlow checkpoint " + prefix_.string());
  return read(*e);
}

torch::Tensor TensorBundle::read(const BundleEntry& e) const {
  std::string what = "variable '" + e.name + "' of " + prefix_.string();
  if (e.num_slices > 0)
    throw UserError(what + " is a partitioned variable, which is not supported; save it unpartitioned");
  auto dtype = torch_dtype_for_tf(e.dtype, what);
  std::string data_path = bundle_data_path(prefix_.string(), e.shard_id, index_.header.num_shards);
  std::error_code ec;
  uint64_t file_size = fs::file_size(data_path, ec);
  if (ec) throw UserError("checkpoint data file not found: " + data_path + " (needed for " + what + ")");
  check_bundle_range(e, file_size, data_path);
  std::vector<int64_t> shape(e.shape.begin(), e.shape.end());
  torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(dtype));
  std::ifstream in(data_path, std::ios::binary);
  in.seekg(e.offset);
  in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.size));
  if (!in || in.gcount() != e.size) throw UserError(data_path + ": cannot read tensor '" + e.name + "' (truncated?)");
  check_bundle_bytes(e, std::string_view(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(e.size)),
                     data_path);
  return t;
}

}  // namespace bert::io
