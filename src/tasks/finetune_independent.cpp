// Independent fine-tuning workers under a launcher (see include/bert/tasks/finetune_independent.h).
#include "bert/tasks/finetune_independent.h"

#include <spdlog/spdlog.h>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/dist/communicator.h"
#include "bert/dist/launch_env.h"
#include "bert/dist/rank_logging.h"

namespace bert::tasks {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

FinetuneResult run_finetune_workers(RunConfig cfg) {
  const dist::LaunchEnv env = dist::detect_launch_env();
  if (!env.distributed()) return run_finetune(std::move(cfg));
  if (!cfg.dist.independent_workers)
    throw UserError("finetune runs as " + std::to_string(env.world_size) +
                    " processes, but fine-tuning across processes trains independent replicas only (no gradient sync); pass --set "
                    "dist.independent_workers=true (each rank trains its own replica, the best is kept) or run one process");
  dist::configure_rank_logging(env.rank, env.world_size);
  // The ranks only meet again when every replica is trained, which may be hours apart: the final
  // gather may wait as long as it takes (a rank that dies still closes its connections at once).
  DistConfig dc = cfg.dist;
  dc.backend = "gloo";  // only small CPU tensors travel
  dc.timeout_s = 1e7;
  auto comm = dist::Communicator::create(env, dc, "gloo");
  const int rank = comm->rank(), world = comm->world_size();
  const fs::path out = cfg.train.output_dir;
  const int64_t base_seed = cfg.train.seed;
  cfg.train.seed = base_seed + rank;
  cfg.train.output_dir = (out / ("rank_" + std::to_string(rank))).string();
  spdlog::info("independent worker {} of {}: seed {}, output {}", rank, world, cfg.train.seed, cfg.train.output_dir);

  FinetuneResult mine = run_finetune(cfg);
  const json& best = mine.summary.contains("best") ? mine.summary["best"] : json();
  const bool has = best.is_object() && best.contains("value");
  // [rank][has best, value, step]
  auto t = torch::zeros({world, 3}, torch::kDouble);
  if (has) {
    t[rank][0] = 1.0;
    t[rank][1] = best["value"].get<double>();
    t[rank][2] = static_cast<double>(best.value("step", int64_t{0}));
  }
  t = comm->allreduce(t, dist::Reduce::Sum);
  FinetuneResult result = mine;
  if (comm->is_main()) {
    auto a = t.accessor<double, 2>();
    const std::string metric = has ? best.value("metric", std::string("metric")) : std::string("metric");
    json workers = json::array();
    int winner = -1;
    for (int r = 0; r < world; ++r) {
      json w = {{"rank", r},
                {"seed", base_seed + r},
                {"dir", (out / ("rank_" + std::to_string(r))).string()},
                {"has_best", a[r][0] > 0}};
      if (a[r][0] > 0) {
        w["best_value"] = a[r][1];
        w["best_step"] = static_cast<int64_t>(a[r][2]);
        if (winner < 0 || a[r][1] > a[winner][1]) winner = r;
      }
      workers.push_back(w);
      spdlog::info("worker rank {} (seed {}): best {} {}", r, base_seed + r, metric,
                   a[r][0] > 0 ? fmt::format("{:.4f} at step {}", a[r][1], static_cast<int64_t>(a[r][2])) : "none");
    }
    json summary = {{"metric", metric}, {"workers", workers}, {"best_rank", winner}};
    if (winner >= 0) {
      fs::path target = fs::path("rank_" + std::to_string(winner)) / "best";
      fs::path link = out / "best", tmp = temp_path_for(link);
      std::error_code ec;
      fs::remove(tmp, ec);
      fs::create_directory_symlink(target, tmp, ec);
      if (ec) throw RuntimeError("cannot create symlink " + tmp.string() + ": " + ec.message());
      if (fs::is_directory(link) && !fs::is_symlink(link)) fs::remove_all(link, ec);
      commit_temp(tmp, link);
      summary["best_dir"] = (out / target).string();
      summary["best_value"] = a[winner][1];
      result.best_dir = out / target;
      spdlog::info("best of {} independent workers: rank {} (seed {}), {} {:.4f} -> {} ({})", world, winner,
                   base_seed + winner, metric, a[winner][1], link.string(), (out / target).string());
    }
    write_file_atomic(out / "independent_workers.json", summary.dump(2) + "\n");
    result.output_dir = out;
  }
  comm->barrier();
  comm->finish();
  return result;
}

}  // namespace bert::tasks
