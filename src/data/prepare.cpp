// `prepare`: plan shards, build each shard's instances on worker threads, write HDF5, keep
// manifest.json current after every shard, and summarise.
#include "bert/data/prepare.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/data/hdf5_io.h"
#include "bert/data/instances.h"
#include "bert/data/prepare_md5.h"

namespace bert::data {

using json = config::json;

std::string shard_file_name(int64_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "shard_%05lld.hdf5", static_cast<long long>(index));
  return buf;
}

namespace {

json stats_json(const ShardStats& s, bool with_file) {
  json j;
  if (with_file) {
    j["index"] = s.index;
    j["file"] = s.file;
    j["md5"] = s.md5;
    j["file_bytes"] = s.file_bytes;
  }
  j["input_bytes"] = s.input_bytes;
  j["documents"] = s.documents;
  j["sentences"] = s.sentences;
  j["instances"] = s.instances;
  j["tokens"] = s.tokens;
  j["padding"] = s.padding;
  j["masked"] = s.masked;
  j["random_next"] = s.random_next;
  j["invalid_utf8_bytes"] = s.invalid_utf8_bytes;
  return j;
}

ShardStats stats_from_json(const json& j) {
  ShardStats s;
  s.index = j.at("index").get<int64_t>();
  s.file = j.at("file").get<std::string>();
  s.md5 = j.at("md5").get<std::string>();
  s.file_bytes = j.at("file_bytes").get<uint64_t>();
  s.input_bytes = j.at("input_bytes").get<uint64_t>();
  s.documents = j.at("documents").get<uint64_t>();
  s.sentences = j.at("sentences").get<uint64_t>();
  s.instances = j.at("instances").get<uint64_t>();
  s.tokens = j.at("tokens").get<uint64_t>();
  s.padding = j.at("padding").get<uint64_t>();
  s.masked = j.at("masked").get<uint64_t>();
  s.random_next = j.at("random_next").get<uint64_t>();
  s.invalid_utf8_bytes = j.at("invalid_utf8_bytes").get<uint64_t>();
  return s;
}

void add_stats(ShardStats& t, const ShardStats& s) {
  t.file_bytes += s.file_bytes;
  t.input_bytes += s.input_bytes;
  t.documents += s.documents;
  t.sentences += s.sentences;
  t.instances += s.instances;
  t.tokens += s.tokens;
  t.padding += s.padding;
  t.masked += s.masked;
  t.random_next += s.random_next;
  t.invalid_utf8_bytes += s.invalid_utf8_bytes;
}

// Everything that determines the bytes of the shards (not where they go or how many workers).
json settings_json(const PrepareConfig& cfg_in, const CorpusPlan& plan, const PrepareTokenizer& tok) {
  PrepareConfig cfg = cfg_in;
  config::FieldList f;
  cfg.describe(f);
  json all = config::write_json(f);
  json s;
  for (auto& [k, v] : all.items())
    if (k != "inputs" && k != "output_dir" && k != "num_workers" && k != "vocab") s[k] = v;
  Md5 vm;
  for (const auto& t : tok.vocab_tokens) {
    vm.update(t.data(), t.size());
    vm.update("\n", 1);
  }
  s["vocab_md5"] = vm.hex();
  s["vocab_size"] = tok.vocab_tokens.size();
  json inputs = json::array();
  for (size_t i = 0; i < plan.files.size(); ++i) inputs.push_back({{"path", plan.files[i]}, {"bytes", plan.file_sizes[i]}});
  s["inputs"] = inputs;
  s["shards"] = plan.shards.size();
  s["rng"] = "xoshiro256** seeded per shard from (random_seed, shard index) via splitmix64";
  return s;
}

// Why a shard gives no instances, naming its input: every text line tokenized to nothing.
// (Any non-empty sentence yields at least one instance, so this is the only way.)
std::string no_instances_message(const PrepareConfig& cfg, const CorpusPlan& plan, int64_t index,
                                 const ReadStats& rs) {
  const ShardRange& range = plan.shards[index];
  std::string where;
  for (size_t f = range.begin.file; f <= range.end.file && f < plan.files.size(); ++f) {
    if (f == range.end.file && range.end.offset == 0 && f != range.begin.file) break;
    where += (where.empty() ? "" : ", ") + plan.files[f];
  }
  if (plan.shards.size() > 1) where += " (the part that makes shard " + std::to_string(index) + ")";
  std::string why = rs.invalid_utf8_bytes > 0
                        ? std::to_string(rs.invalid_utf8_bytes) + " invalid UTF-8 byte(s) were skipped and the rest"
                        : "its text";
  return "input " + where + " gives no training instances: " + why +
         " tokenizes to nothing with vocab " + cfg.vocab +
         " (only blank, control or dropped characters?); check --input, --input-format and the encoding";
}

// Builds shard `index` and writes it; returns its stats (md5 included).
ShardStats build_shard(const PrepareConfig& cfg, const CorpusPlan& plan, int64_t index, InputFormat format,
                       const PrepareTokenizer& tok, const MaskingVocab& mv,
                       const std::function<void(uint64_t)>& on_bytes) {
  const ShardRange& range = plan.shards[index];
  Rng rng = Rng::for_stream(static_cast<uint64_t>(cfg.random_seed), static_cast<uint64_t>(index));
  ReadStats rs;
  std::vector<Document> docs =
      read_shard_documents(plan, range, format, static_cast<uint64_t>(cfg.max_line_bytes), tok.encode, rs, on_bytes);
  if (docs.empty()) throw UserError(no_instances_message(cfg, plan, index, rs));
  rng.shuffle(docs);

  InstanceOptions opts;
  opts.max_seq_length = cfg.max_seq_length;
  opts.short_seq_prob = cfg.short_seq_prob;
  opts.masking = !cfg.no_masking;
  opts.mask.masked_lm_prob = cfg.masked_lm_prob;
  opts.mask.max_predictions_per_seq = cfg.max_predictions_per_seq;
  opts.mask.whole_word_mask = cfg.whole_word_mask;
  std::vector<TrainingInstance> instances;
  for (int64_t d = 0; d < cfg.dupe_factor; ++d)
    for (size_t i = 0; i < docs.size(); ++i) create_instances_from_document(docs, i, opts, mv, rng, instances);
  docs.clear();
  docs.shrink_to_fit();
  rng.shuffle(instances);

  ShardStats st;
  st.index = index;
  st.file = shard_file_name(index);
  st.input_bytes = range.bytes;
  st.documents = rs.documents;
  st.sentences = rs.sentences;
  st.invalid_utf8_bytes = rs.invalid_utf8_bytes;
  st.instances = instances.size();

  const int64_t L = cfg.max_seq_length;
  const int64_t P = cfg.no_masking ? 0 : cfg.max_predictions_per_seq;
  fs::path out = fs::path(cfg.output_dir) / st.file;
  Hdf5Writer writer(out, static_cast<int64_t>(instances.size()), L, P, !cfg.no_masking, cfg.compress);
  constexpr int64_t kBlock = 4096;
  PretrainRows rows;
  for (int64_t b = 0; b < static_cast<int64_t>(instances.size()); b += kBlock) {
    int64_t n = std::min<int64_t>(kBlock, static_cast<int64_t>(instances.size()) - b);
    rows.resize(n, L, P);
    for (int64_t r = 0; r < n; ++r) {
      TrainingInstance& inst = instances[b + r];
      const int64_t len = static_cast<int64_t>(inst.tokens.size());
      const int64_t seg_a = inst.len_a + 2;
      for (int64_t t = 0; t < len; ++t) {
        rows.input_ids[r * L + t] = inst.tokens[t];
        rows.input_mask[r * L + t] = 1;
        rows.segment_ids[r * L + t] = t < seg_a ? 0 : 1;
      }
      for (size_t k = 0; k < inst.lm.positions.size(); ++k) {
        rows.masked_lm_positions[r * P + k] = inst.lm.positions[k];
        rows.masked_lm_ids[r * P + k] = inst.lm.labels[k];
      }
      rows.next_sentence_labels[r] = inst.is_random_next ? 1 : 0;
      st.tokens += len;
      st.padding += L - len;
      st.masked += inst.lm.positions.size();
      st.random_next += inst.is_random_next ? 1 : 0;
      inst = TrainingInstance{};  // free as we go
    }
    writer.write(b, rows);
  }
  writer.commit();
  st.md5 = md5_file(out);
  st.file_bytes = fs::file_size(out);
  return st;
}

void remove_stale_temps(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if ((starts_with(name, "shard_") && name.find(".hdf5.tmp.") != std::string::npos) ||
        starts_with(name, "manifest.json.tmp.")) {
      std::error_code ec2;
      fs::remove(it->path(), ec2);
    }
  }
}

}  // namespace

PrepareSummary run_prepare(const PrepareConfig& cfg_in, const PrepareTokenizer& tok) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  // Shards allocate and free many multi-MB buffers; keep them on the heap instead of
  // mmap/munmap-ing (and page-faulting) each one.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  PrepareConfig cfg = cfg_in;
  {
    config::FieldList f;
    cfg.describe(f);
    config::validate(f, "prepare");
  }
  if (cfg.max_seq_length < 8) throw UserError("--max-seq-length must be at least 8");
  if (tok.cls_id < 0 || tok.sep_id < 0 || tok.mask_id < 0)
    throw UserError("vocab " + cfg.vocab + " lacks [CLS], [SEP] or [MASK]; use a BERT vocab");
  if (cfg.output_dir.empty()) throw UserError("--output-dir is required");
  const InputFormat format = parse_input_format(cfg.input_format);
  const fs::path out_dir = cfg.output_dir;

  auto files = resolve_inputs(cfg.inputs);
  ensure_writable_dir(out_dir);
  remove_stale_temps(out_dir);

  uint64_t total = 0;
  for (const auto& f : files) {
    std::error_code ec;
    total += fs::file_size(f, ec);
  }
  uint64_t target = cfg.num_shards > 0 ? (total + cfg.num_shards - 1) / static_cast<uint64_t>(cfg.num_shards)
                                       : static_cast<uint64_t>(std::max(1.0, cfg.shard_size_mb * 1e6));
  spdlog::info("prepare: scanning {} input file(s), {}B", files.size(), human_count(static_cast<double>(total)));
  CorpusPlan plan = plan_shards(files, format, target, static_cast<uint64_t>(cfg.max_line_bytes));
  const int64_t nshards = static_cast<int64_t>(plan.shards.size());
  if (cfg.num_shards > 0 && nshards < cfg.num_shards)
    spdlog::warn("prepare: only {} shard(s) instead of {}: the corpus has too few documents to cut more", nshards,
                 cfg.num_shards);

  MaskingVocab mv;
  mv.cls_id = tok.cls_id;
  mv.sep_id = tok.sep_id;
  mv.mask_id = tok.mask_id;
  mv.vocab_size = static_cast<int32_t>(tok.vocab_tokens.size());
  mv.is_continuation.resize(tok.vocab_tokens.size());
  for (size_t i = 0; i < tok.vocab_tokens.size(); ++i) mv.is_continuation[i] = starts_with(tok.vocab_tokens[i], "##");

  // ---- resume: keep shards whose manifest entry still matches the file ----
  const json settings = settings_json(cfg, plan, tok);
  const fs::path manifest_path = out_dir / "manifest.json";
  std::vector<std::optional<ShardStats>> done(nshards);
  int64_t reused = 0;
  std::error_code ec;
  if (fs::exists(manifest_path, ec)) {
    json old;
    try {
      old = json::parse(read_file(manifest_path));
    } catch (const std::exception&) {
      old = json();
    }
    // Compared without regard to key order (a hand-edited manifest may be reordered).
    auto same = [](const json& a, const json& b) {
      return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump());
    };
    if (old.is_object() && old.contains("settings") && same(old["settings"], settings) && old.contains("shards")) {
      for (const auto& e : old["shards"]) {
        try {
          ShardStats s = stats_from_json(e);
          if (s.index < 0 || s.index >= nshards || s.file != shard_file_name(s.index)) continue;
          fs::path p = out_dir / s.file;
          if (fs::exists(p, ec) && md5_file(p) == s.md5) {
            done[s.index] = s;
            ++reused;
          }
        } catch (const json::exception&) {
        }
      }
      if (reused > 0) spdlog::info("prepare: {} of {} shard(s) already complete (md5 verified); skipping them", reused, nshards);
    } else {
      spdlog::info("prepare: {} is from different settings or inputs; rebuilding every shard", manifest_path.string());
    }
  }

  std::mutex mu;  // guards done + manifest writes
  auto write_manifest = [&](bool complete) {
    json m;
    m["tool"] = "bert-train prepare";
    m["manifest_version"] = 1;
    m["complete"] = complete;
    m["settings"] = settings;
    ShardStats totals;
    json shards = json::array();
    for (const auto& d : done)
      if (d) {
        shards.push_back(stats_json(*d, true));
        add_stats(totals, *d);
      }
    m["shards"] = shards;
    m["totals"] = stats_json(totals, false);
    write_file_atomic(manifest_path, m.dump(2) + "\n");
  };

  std::vector<int64_t> todo;
  uint64_t todo_bytes = 0;
  for (int64_t i = 0; i < nshards; ++i)
    if (!done[i]) {
      todo.push_back(i);
      todo_bytes += plan.shards[i].bytes;
    }
  int64_t workers = cfg.num_workers > 0 ? cfg.num_workers : std::max<int64_t>(1, std::thread::hardware_concurrency());
  workers = std::max<int64_t>(1, std::min<int64_t>(workers, static_cast<int64_t>(todo.size())));
  spdlog::info("prepare: {} shard(s) to build ({}B of text), {} worker(s), seq {} / {} predictions, dupe factor {}{}",
               todo.size(), human_count(static_cast<double>(todo_bytes)), workers, cfg.max_seq_length,
               cfg.no_masking ? 0 : cfg.max_predictions_per_seq, cfg.dupe_factor,
               cfg.no_masking ? ", no masking" : (cfg.whole_word_mask ? ", whole-word masking" : ""));

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes_done{0}, instances_done{0};
  std::atomic<int64_t> shards_done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::condition_variable cv;
  auto worker = [&]() {
    while (!failed) {
      size_t k = next++;
      if (k >= todo.size()) break;
      int64_t idx = todo[k];
      try {
        ShardStats st = build_shard(cfg, plan, idx, format, tok, mv, [&](uint64_t b) { bytes_done += b; });
        std::lock_guard<std::mutex> lock(mu);
        done[idx] = st;
        instances_done += st.instances;
        ++shards_done;
        write_manifest(false);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
      cv.notify_all();
    }
    cv.notify_all();
  };
  std::vector<std::thread> threads;
  const auto t_build = clock::now();
  if (!todo.empty()) {
    for (int64_t w = 0; w < workers; ++w) threads.emplace_back(worker);
    // Progress: every 2 s until every shard is built (or one failed).
    std::unique_lock<std::mutex> lock(mu);
    int64_t last_shards = 0;
    auto last_line = clock::now();
    while (!failed && shards_done < static_cast<int64_t>(todo.size())) {
      cv.wait_for(lock, std::chrono::seconds(2));
      if (failed || shards_done >= static_cast<int64_t>(todo.size())) break;
      // A line when a shard finished or 2 s passed, never twice for the same state.
      const auto now = clock::now();
      if (shards_done == last_shards && now - last_line < std::chrono::milliseconds(1900)) continue;
      last_shards = shards_done;
      last_line = now;
      double el = std::chrono::duration<double>(clock::now() - t_build).count();
      double b = static_cast<double>(bytes_done.load());
      double rate = el > 0 ? b / el : 0;
      double frac = todo_bytes ? std::min(1.0, b / static_cast<double>(todo_bytes)) : 1.0;
      // Counts of the shards finished so far (built in this run or kept from an earlier one).
      ShardStats sofar;
      for (const auto& d : done)
        if (d) add_stats(sofar, *d);
      const double ninst = static_cast<double>(std::max<uint64_t>(sofar.instances, 1));
      std::string bar(20, '.');
      std::fill(bar.begin(), bar.begin() + static_cast<std::ptrdiff_t>(20 * frac), '#');
      spdlog::info("prepare: [{}] {:5.1f}%  shards {}/{}  {}B/s of text  ETA {}  | {} documents, {} sentences, "
                   "{} instances, {} tokens, avg length {:.1f}, padding {:.1f}%, {} masked, random next {:.1f}%",
                   bar, 100 * frac, shards_done.load(), todo.size(), human_count(rate),
                   rate > 0 ? human_duration((static_cast<double>(todo_bytes) - b) / rate) : std::string("?"),
                   human_count(static_cast<double>(sofar.documents)), human_count(static_cast<double>(sofar.sentences)),
                   human_count(static_cast<double>(sofar.instances)), human_count(static_cast<double>(sofar.tokens)),
                   static_cast<double>(sofar.tokens) / ninst,
                   100.0 * static_cast<double>(sofar.padding) / (ninst * static_cast<double>(cfg.max_seq_length)),
                   human_count(static_cast<double>(sofar.masked)), 100.0 * static_cast<double>(sofar.random_next) / ninst);
    }
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  write_manifest(true);

  PrepareSummary sum;
  sum.reused = reused;
  for (auto& d : done) {
    sum.shards.push_back(*d);
    add_stats(sum.totals, *d);
  }
  sum.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  const auto& T = sum.totals;
  double n = static_cast<double>(std::max<uint64_t>(T.instances, 1));
  spdlog::info("prepare: done in {}: {} shard(s) in {} ({} reused)", human_duration(sum.seconds), nshards,
               out_dir.string(), reused);
  spdlog::info("prepare: {} documents, {} sentences, {} instances, {} tokens; average real length {:.1f} of {}, "
               "padding {:.1f}%, {} masked tokens ({:.2f} per instance), random next {:.1f}%",
               T.documents, T.sentences, T.instances, T.tokens, static_cast<double>(T.tokens) / n, cfg.max_seq_length,
               100.0 * static_cast<double>(T.padding) / (n * static_cast<double>(cfg.max_seq_length)), T.masked,
               static_cast<double>(T.masked) / n, 100.0 * static_cast<double>(T.random_next) / n);
  double secs = std::chrono::duration<double>(clock::now() - t_build).count();
  if (!todo.empty() && secs > 0)
    spdlog::info("prepare: {:.0f} instances/s, {:.2f} MB of text/s", static_cast<double>(instances_done) / secs,
                 static_cast<double>(todo_bytes) / 1e6 / secs);
  if (T.invalid_utf8_bytes > 0)
    spdlog::warn("prepare: skipped {} invalid UTF-8 byte(s) in the input", T.invalid_utf8_bytes);
  return sum;
}

}  // namespace bert::data
