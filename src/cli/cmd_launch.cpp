// bert-train launch: start N local workers of a data-parallel job (torchrun-style variables),
// forward their output and signals, stop them all when one fails.
#include "bert/dist/launcher.h"
#include "command.h"

namespace bert::cli {

static Action setup_launch(CLI::App& app, GlobalOptions&) {
  auto* sub = app.add_subcommand(
      "launch", "run a command in N local worker processes of a distributed job (like torchrun)");
  sub->footer(
      "Everything after '--' is the worker command (bert-train arguments unless --program is given).\n"
      "Examples:\n"
      "  bert-train launch --nproc-per-node 2 -- pretrain --config configs/pretrain_tiny_128_lamb.json\n"
      "  bert-train launch --nnodes 2 --node-rank 0 --master-addr node01 --nproc-per-node 2 -- pretrain ...");
  auto o = std::make_shared<dist::LaunchOptions>();
  sub->add_option("--nproc-per-node", o->nproc_per_node, "worker processes on this node (one per socket or GPU)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--nnodes", o->nnodes, "nodes in the job (run launch on each)")->check(CLI::Range(1, 1 << 20));
  sub->add_option("--node-rank", o->node_rank, "this node's index in [0, nnodes)")->check(CLI::Range(0, 1 << 20));
  sub->add_option("--master-addr", o->master_addr, "host of rank 0 (reachable from every node)");
  sub->add_option("--master-port", o->master_port, "rendezvous TCP port on the master (0 = any free port, one node)")
      ->check(CLI::Range(0, 65535));
  sub->add_option("--program", o->program, "run this executable instead of bert-train");
  sub->add_option("--stop-timeout", o->stop_grace_s, "seconds between SIGTERM and SIGKILL when stopping workers")
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("--omp-threads", o->omp_threads,
                  "OMP_NUM_THREADS per worker (0 = inherit, or cores / nproc-per-node when unset)")
      ->check(CLI::Range(0, 4096));
  auto no_prefix = std::make_shared<bool>(false);
  sub->add_flag("--no-prefix", *no_prefix, "forward worker output without the '[rank N] ' prefix");
  sub->add_option("command", o->args, "worker command, after '--'")->expected(-1);
  return [o, no_prefix]() {
    o->prefix_output = !*no_prefix;
    return dist::run_launcher(*o);
  };
}

BERT_COMMAND(launch, 80, setup_launch);

}  // namespace bert::cli
