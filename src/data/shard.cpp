// Rebalancing HDF5 pretraining files into equal-size shards, streaming block by block.
#include "bert/data/shard.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/data/hdf5_io.h"
#include "bert/data/prepare_input.h"

namespace bert::data {

ShardResult run_shard(const ShardConfig& cfg) {
  if (cfg.num_shards < 1) throw UserError("--num-shards must be at least 1");
  if (cfg.output_dir.empty()) throw UserError("--output-dir is required");
  auto files = resolve_inputs(cfg.inputs);
  std::vector<std::unique_ptr<Hdf5Reader>> readers;
  int64_t total = 0, L = -1, P = -1;
  bool masking = true;
  for (const auto& f : files) {
    auto r = std::make_unique<Hdf5Reader>(f);
    if (L < 0) {
      L = r->seq_length();
      P = r->max_predictions();
      masking = r->has_masking();
    } else if (r->seq_length() != L || r->max_predictions() != P || r->has_masking() != masking) {
      throw UserError("HDF5 file " + f + " has shape L=" + std::to_string(r->seq_length()) + " P=" +
                      std::to_string(r->max_predictions()) + " but " + files[0] + " has L=" + std::to_string(L) +
                      " P=" + std::to_string(P) + "; shard files of one kind at a time");
    }
    total += r->size();
    readers.push_back(std::move(r));
  }
  if (total == 0) throw UserError("the input files hold no instances");
  if (cfg.num_shards > total)
    throw UserError("--num-shards " + std::to_string(cfg.num_shards) + " is more than the " + std::to_string(total) +
                    " instances in the inputs");
  const fs::path out_dir = cfg.output_dir;
  ensure_writable_dir(out_dir);
  // Do not overwrite an input we are still reading.
  for (int64_t m = 0; m < cfg.num_shards; ++m) {
    char name[64];
    std::snprintf(name, sizeof name, "_%05lld.hdf5", static_cast<long long>(m));
    fs::path out = out_dir / (cfg.prefix + name);
    std::error_code ec;
    for (const auto& f : files)
      if (fs::exists(out, ec) && fs::equivalent(out, f, ec))
        throw UserError("output " + out.string() + " is also an input; choose another --output-dir");
  }
  spdlog::info("shard: {} file(s), {} instances (L={}, P={}) -> {} shard(s) of about {}", files.size(), total, L, P,
               cfg.num_shards, total / cfg.num_shards);

  ShardResult res;
  res.total = total;
  size_t fi = 0;
  int64_t in_row = 0;  // next row of readers[fi]
  constexpr int64_t kBlock = 8192;
  PretrainRows rows;
  for (int64_t m = 0; m < cfg.num_shards; ++m) {
    int64_t begin = m * total / cfg.num_shards, end = (m + 1) * total / cfg.num_shards;
    int64_t n = end - begin;
    char name[64];
    std::snprintf(name, sizeof name, "_%05lld.hdf5", static_cast<long long>(m));
    fs::path out = out_dir / (cfg.prefix + name);
    Hdf5Writer writer(out, n, L, P, masking, cfg.compress);
    int64_t written = 0;
    while (written < n) {
      while (in_row >= readers[fi]->size()) {
        ++fi;
        in_row = 0;
      }
      int64_t take = std::min({kBlock, n - written, readers[fi]->size() - in_row});
      readers[fi]->read(in_row, in_row + take, rows);
      writer.write(written, rows);
      written += take;
      in_row += take;
    }
    writer.commit();
    res.files.push_back(out.string());
    res.rows.push_back(n);
    spdlog::info("shard: wrote {} ({} instances)", out.string(), n);
  }
  spdlog::info("shard: done: {} instances in {} shard(s)", total, cfg.num_shards);
  return res;
}

}  // namespace bert::data
