// bert-train shard: rebalance pretraining HDF5 files into M shards of equal instance count.
#include "bert/data/shard.h"
#include "command.h"

namespace bert::cli {

namespace {

Action setup_shard(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("shard", "rebalance HDF5 pretraining files into shards of equal instance count");
  auto c = std::make_shared<data::ShardConfig>();
  sub->add_option("--input", c->inputs, "input HDF5 files or globs (ours, NVIDIA's, MLPerf's int16)")
      ->required()
      ->expected(1, -1);
  sub->add_option("--output-dir", c->output_dir, "directory for the new shards")->required();
  sub->add_option("--num-shards", c->num_shards, "number of output shards")->required()->check(CLI::Range(1, 1000000));
  sub->add_option("--prefix", c->prefix, "output file names: <prefix>_NNNNN.hdf5");
  sub->add_flag("--compress", c->compress, "gzip the HDF5 datasets");
  return [c, &g]() {
    apply_globals(g);
    data::run_shard(*c);
    return 0;
  };
}

}  // namespace

BERT_COMMAND(shard, 31, setup_shard);

}  // namespace bert::cli
