// bert-train shard: rebalance pretraining HDF5 files into M shards of equal instance count;
// with --pack, each shard is packed (up to --pack-max-sequences sequences per row, docs/packing.md).
#include "bert/data/pack.h"
#include "bert/data/shard.h"
#include "command.h"

namespace bert::cli {

namespace {

struct ShardArgs {
  data::ShardConfig shard;
  bool pack = false;
  data::PackOptions pack_opts;
};

Action setup_shard(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("shard", "rebalance HDF5 pretraining files into shards of equal instance count");
  auto a = std::make_shared<ShardArgs>();
  auto* c = &a->shard;
  sub->add_option("--input", c->inputs, "input HDF5 files or globs (ours, NVIDIA's, MLPerf's int16)")
      ->required()
      ->expected(1, -1);
  sub->add_option("--output-dir", c->output_dir, "directory for the new shards")->required();
  sub->add_option("--num-shards", c->num_shards, "number of output shards")->required()->check(CLI::Range(1, 1000000));
  sub->add_option("--prefix", c->prefix, "output file names: <prefix>_NNNNN.hdf5");
  sub->add_flag("--compress", c->compress, "gzip the HDF5 datasets");
  sub->add_flag("--pack", a->pack,
                "pack each output shard: several sequences per row (SPFHP), block-diagonal attention; writes "
                "manifest.json with the packing factor");
  sub->add_option("--pack-max-sequences", a->pack_opts.max_sequences_per_row, "sequences per packed row")
      ->capture_default_str()
      ->check(CLI::Range(1, 127));
  sub->add_option("--pack-max-predictions", a->pack_opts.max_predictions,
                  "masked tokens per packed row (0 = pack-max-sequences x the input's max predictions)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--pack-seed", a->pack_opts.seed, "seed of the packed rows' order")->capture_default_str();
  return [a, &g]() {
    apply_globals(g);
    if (!a->pack) {
      data::run_shard(a->shard);
      return 0;
    }
    data::PackConfig p;
    p.inputs = a->shard.inputs;
    p.output_dir = a->shard.output_dir;
    p.num_shards = a->shard.num_shards;
    p.compress = a->shard.compress;
    p.prefix = a->shard.prefix;
    p.pack = a->pack_opts;
    data::run_pack(p);
    return 0;
  };
}

}  // namespace

BERT_COMMAND(shard, 31, setup_shard);

}  // namespace bert::cli
