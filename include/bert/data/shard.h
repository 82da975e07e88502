#pragma once
// `bert-train shard`: rebalance N pretraining HDF5 files into M files of equal instance count
// (the job of MLPerf's chop_hdf5_files.py). Rows keep their order (inputs in the order given,
// concatenated); output m gets rows [m*T/M, (m+1)*T/M) of the T total, so counts differ by at
// most one. Reads our files and MLPerf's int16 variant; writes NVIDIA's schema. Streams in
// blocks, so memory stays at a few blocks of rows whatever the file sizes.
#include <cstdint>
#include <string>
#include <vector>

namespace bert::data {

struct ShardConfig {
  std::vector<std::string> inputs;  // files or globs
  std::string output_dir;
  int64_t num_shards = 1;
  bool compress = false;
  std::string prefix = "shard";  // output names: <prefix>_00000.hdf5
};

struct ShardResult {
  std::vector<std::string> files;
  std::vector<int64_t> rows;
  int64_t total = 0;
};

ShardResult run_shard(const ShardConfig& cfg);

}  // namespace bert::data
