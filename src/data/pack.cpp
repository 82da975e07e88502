// Sequence packing: SPFHP over sequence lengths, packed-row assembly, and the HDF5 -> HDF5 pass
// (see include/bert/data/pack.h and docs/packing.md).
#include "bert/data/pack.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <set>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/data/instances_rng.h"
#include "bert/data/prepare_input.h"

namespace bert::data {

// ---- the packer ---------------------------------------------------------------------------------

std::vector<std::vector<int64_t>> pack_sequences(const std::vector<int64_t>& lengths,
                                                 const std::vector<int64_t>& predictions, int64_t row_length,
                                                 int64_t max_predictions, int64_t max_per_row) {
  if (max_per_row < 1) throw UserError("max sequences per packed row must be at least 1");
  const bool limit_pred = !predictions.empty();
  if (limit_pred && predictions.size() != lengths.size()) throw RuntimeError("internal: lengths/predictions size");
  const int64_t n = static_cast<int64_t>(lengths.size());
  // Longest first; equal lengths keep their input order (the result is deterministic).
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });

  std::vector<std::vector<int64_t>> packs;
  std::vector<int64_t> room, pred_room;                      // per pack
  std::vector<std::vector<int64_t>> open(row_length + 1);   // open packs by tokens of room left
  std::set<int64_t> nonempty;                               // room values with an open pack
  for (int64_t i : order) {
    const int64_t len = lengths[i], pred = limit_pred ? predictions[i] : 0;
    if (len < 1 || len > row_length)
      throw UserError("sequence of " + std::to_string(len) + " tokens does not fit a packed row of " +
                      std::to_string(row_length));
    if (limit_pred && pred > max_predictions)
      throw UserError("a sequence has " + std::to_string(pred) + " masked tokens, more than the " +
                      std::to_string(max_predictions) + " a packed row holds; raise --pack-max-predictions");
    // Shortest pack first: the open pack with the least room that still fits.
    int64_t chosen = -1;
    for (auto it = nonempty.lower_bound(len); it != nonempty.end(); ++it) {
      auto& bucket = open[*it];
      size_t b = bucket.size();
      while (b-- > 0 && pred_room[bucket[b]] < pred) {
      }
      if (b < bucket.size()) {
        chosen = bucket[b];
        bucket.erase(bucket.begin() + static_cast<std::ptrdiff_t>(b));
        if (bucket.empty()) nonempty.erase(it);
        break;
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int64_t>(packs.size());
      packs.emplace_back();
      room.push_back(row_length);
      pred_room.push_back(limit_pred ? max_predictions : 0);
    }
    packs[chosen].push_back(i);
    room[chosen] -= len;
    pred_room[chosen] -= pred;
    if (static_cast<int64_t>(packs[chosen].size()) < max_per_row && room[chosen] > 0) {
      open[room[chosen]].push_back(chosen);
      nonempty.insert(room[chosen]);
    }
  }
  return packs;
}

// ---- statistics ---------------------------------------------------------------------------------

double PackStats::padding_before() const {
  double slots = static_cast<double>(rows_in) * static_cast<double>(seq_length);
  return slots > 0 ? 1.0 - static_cast<double>(tokens) / slots : 0;
}

double PackStats::padding_after() const {
  double slots = static_cast<double>(rows_out) * static_cast<double>(seq_length);
  return slots > 0 ? 1.0 - static_cast<double>(tokens) / slots : 0;
}

void PackStats::add(const PackStats& o) {
  sequences += o.sequences;
  rows_in += o.rows_in;
  rows_out += o.rows_out;
  tokens += o.tokens;
  masked_tokens += o.masked_tokens;
  seq_length = std::max(seq_length, o.seq_length);
  if (rows_holding.size() < o.rows_holding.size()) rows_holding.resize(o.rows_holding.size(), 0);
  for (size_t k = 0; k < o.rows_holding.size(); ++k) rows_holding[k] += o.rows_holding[k];
}

config::json PackStats::to_json() const {
  config::json hist = config::json::object();
  for (size_t k = 1; k < rows_holding.size(); ++k) hist[std::to_string(k)] = rows_holding[k];
  return {{"sequences", sequences},
          {"rows_before", rows_in},
          {"rows_after", rows_out},
          {"tokens", tokens},
          {"masked_tokens", masked_tokens},
          {"seq_length", seq_length},
          {"sequences_per_row", sequences_per_row()},
          {"padding_fraction_before", padding_before()},
          {"padding_fraction_after", padding_after()},
          {"rows_holding_k_sequences", hist}};
}

std::string PackStats::summary() const {
  std::string hist;
  for (size_t k = 1; k < rows_holding.size(); ++k)
    hist += (hist.empty() ? "" : ", ") + std::to_string(rows_holding[k]) + " x" + std::to_string(k);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%lld sequences in %lld rows -> %lld packed rows: %.3f sequences/row, padding %.1f%% -> %.1f%% (%s)",
                static_cast<long long>(sequences), static_cast<long long>(rows_in), static_cast<long long>(rows_out),
                sequences_per_row(), 100.0 * padding_before(), 100.0 * padding_after(), hist.c_str());
  return buf;
}

// ---- packed rows --------------------------------------------------------------------------------

PretrainRows pack_rows(const PretrainRows& in, const PackOptions& opts, uint64_t stream, PackStats* stats) {
  if (in.packed()) throw UserError("the input is already packed; pack unpacked shards");
  if (in.max_predictions <= 0)
    throw UserError("packing needs masked instances (masked_lm_* datasets); files written with --no-masking "
                    "cannot be packed");
  const int64_t L = in.seq_length, P = in.max_predictions, S = opts.max_sequences_per_row;
  if (S < 1 || S > 127) throw UserError("--pack-max-sequences must lie in [1, 127], got " + std::to_string(S));
  const int64_t Pp = opts.max_predictions > 0 ? opts.max_predictions : S * P;
  std::vector<int64_t> len(in.rows), pred(in.rows);
  PackStats st;
  st.seq_length = L;
  st.rows_in = in.rows;
  st.sequences = in.rows;
  for (int64_t r = 0; r < in.rows; ++r) {
    int64_t n = 0;
    for (int64_t x = 0; x < L; ++x) n += in.input_mask[r * L + x] != 0;
    for (int64_t x = n; x < L; ++x)
      if (in.input_mask[r * L + x] != 0)
        throw UserError("row " + std::to_string(r) + " has padding inside its input_mask; only right-padded rows can be packed");
    int64_t p = 0;
    while (p < P && in.masked_lm_positions[r * P + p] != 0) ++p;
    for (int64_t x = 0; x < p; ++x)
      if (in.masked_lm_positions[r * P + x] >= n)
        throw UserError("row " + std::to_string(r) + " has a masked position past its last token; the file is corrupt");
    len[r] = n;
    pred[r] = p;
    st.tokens += n;
    st.masked_tokens += p;
  }
  auto packs = pack_sequences(len, pred, L, Pp, S);
  Rng rng = Rng::for_stream(opts.seed, stream);
  rng.shuffle(packs);

  PretrainRows out;
  const int64_t N = static_cast<int64_t>(packs.size());
  out.resize(N, L, Pp, S);
  st.rows_out = N;
  st.rows_holding.assign(S + 1, 0);
  for (int64_t row = 0; row < N; ++row) {
    int64_t off = 0, slot = 0;
    const auto& pk = packs[row];
    ++st.rows_holding[pk.size()];
    for (size_t j = 0; j < pk.size(); ++j) {
      const int64_t r = pk[j], n = len[r];
      for (int64_t x = 0; x < n; ++x) {
        const int64_t src = r * L + x, dst = row * L + off + x;
        out.input_ids[dst] = in.input_ids[src];
        out.segment_ids[dst] = in.segment_ids[src];
        out.input_mask[dst] = 1;
        out.position_ids[dst] = static_cast<int32_t>(x);
        out.sequence_index[dst] = static_cast<int32_t>(j + 1);
      }
      for (int64_t x = 0; x < pred[r]; ++x) {
        out.masked_lm_positions[row * Pp + slot] = static_cast<int32_t>(in.masked_lm_positions[r * P + x] + off);
        out.masked_lm_ids[row * Pp + slot] = in.masked_lm_ids[r * P + x];
        ++slot;
      }
      out.cls_positions[row * S + j] = static_cast<int32_t>(off);
      out.next_sentence_labels[row * S + j] = in.next_sentence_labels[r];
      off += n;
    }
  }
  if (stats) stats->add(st);
  return out;
}

// ---- the HDF5 pass ------------------------------------------------------------------------------

namespace {

// Appends rows [0, src.rows) of src to dst (both unpacked, same L and P).
void append_rows(PretrainRows& dst, const PretrainRows& src) {
  auto cat = [](std::vector<int32_t>& a, const std::vector<int32_t>& b) { a.insert(a.end(), b.begin(), b.end()); };
  cat(dst.input_ids, src.input_ids);
  cat(dst.input_mask, src.input_mask);
  cat(dst.segment_ids, src.segment_ids);
  cat(dst.masked_lm_positions, src.masked_lm_positions);
  cat(dst.masked_lm_ids, src.masked_lm_ids);
  cat(dst.next_sentence_labels, src.next_sentence_labels);
  dst.rows += src.rows;
}

std::string shard_name(const std::string& prefix, int64_t m) {
  char name[64];
  std::snprintf(name, sizeof name, "_%05lld.hdf5", static_cast<long long>(m));
  return prefix + name;
}

}  // namespace

PackResult run_pack(const PackConfig& cfg) {
  if (cfg.output_dir.empty()) throw UserError("--output-dir is required");
  if (cfg.num_shards < 0) throw UserError("--num-shards must be at least 1 (0 = one per input file)");
  auto files = resolve_inputs(cfg.inputs);
  std::vector<std::unique_ptr<Hdf5Reader>> readers;
  int64_t total = 0, L = -1, P = -1;
  for (const auto& f : files) {
    auto r = std::make_unique<Hdf5Reader>(f);
    if (r->is_packed()) throw UserError("HDF5 file " + f + " is already packed; pack the unpacked shards");
    if (!r->has_masking())
      throw UserError("HDF5 file " + f + " has no masked_lm_* datasets (--no-masking); packing needs masked "
                      "instances: prepare without --no-masking");
    if (L < 0) {
      L = r->seq_length();
      P = r->max_predictions();
    } else if (r->seq_length() != L || r->max_predictions() != P) {
      throw UserError("HDF5 file " + f + " has shape L=" + std::to_string(r->seq_length()) + " P=" +
                      std::to_string(r->max_predictions()) + " but " + files[0] + " has L=" + std::to_string(L) +
                      " P=" + std::to_string(P) + "; pack files of one kind at a time");
    }
    total += r->size();
    readers.push_back(std::move(r));
  }
  if (total == 0) throw UserError("the input files hold no instances");
  const int64_t M = cfg.num_shards > 0 ? cfg.num_shards : static_cast<int64_t>(files.size());
  if (M > total)
    throw UserError("--num-shards " + std::to_string(M) + " is more than the " + std::to_string(total) +
                    " instances in the inputs");
  const fs::path out_dir = cfg.output_dir;
  ensure_writable_dir(out_dir);
  for (int64_t m = 0; m < M; ++m) {
    fs::path out = out_dir / shard_name(cfg.prefix, m);
    std::error_code ec;
    for (const auto& f : files)
      if (fs::exists(out, ec) && fs::equivalent(out, f, ec))
        throw UserError("output " + out.string() + " is also an input; choose another --output-dir");
  }
  const int64_t S = cfg.pack.max_sequences_per_row;
  const int64_t Pp = cfg.pack.max_predictions > 0 ? cfg.pack.max_predictions : S * P;
  spdlog::info("pack: {} file(s), {} instances (L={}, P={}) -> {} packed shard(s), up to {} sequences and {} masked "
               "tokens per row",
               files.size(), total, L, P, M, S, Pp);

  PackResult res;
  config::json manifest_files = config::json::array();
  auto t0 = std::chrono::steady_clock::now();
  size_t fi = 0;
  int64_t in_row = 0, done = 0;
  constexpr int64_t kBlock = 8192;
  PretrainRows block;
  for (int64_t m = 0; m < M; ++m) {
    const int64_t n = (m + 1) * total / M - m * total / M;
    PretrainRows rows;
    rows.resize(0, L, P);
    while (rows.rows < n) {
      while (in_row >= readers[fi]->size()) {
        ++fi;
        in_row = 0;
      }
      int64_t take = std::min({kBlock, n - rows.rows, readers[fi]->size() - in_row});
      readers[fi]->read(in_row, in_row + take, block);
      append_rows(rows, block);
      in_row += take;
    }
    PackStats st;
    PretrainRows packed = pack_rows(rows, cfg.pack, static_cast<uint64_t>(m), &st);
    fs::path out = out_dir / shard_name(cfg.prefix, m);
    Hdf5Writer writer(out, packed.rows, L, Pp, /*masking=*/true, cfg.compress, S);
    writer.write(0, packed);
    writer.commit();
    res.files.push_back(out.string());
    res.rows.push_back(packed.rows);
    res.stats.add(st);
    manifest_files.push_back(
        config::json{{"file", out.filename().string()}, {"rows", packed.rows}, {"sequences", st.sequences}});
    done += n;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
    spdlog::info("pack: wrote {} ({} -> {} rows, {:.3f} sequences/row) | {}/{} instances, {:.0f} instances/s, eta {}",
                 out.string(), n, packed.rows, st.sequences_per_row(), done, total, rate,
                 human_duration(rate > 0 ? static_cast<double>(total - done) / rate : 0.0));
  }
  config::json manifest = {{"format", "bert-train packed shards v1"},
                           {"max_sequences_per_row", S},
                           {"max_predictions_per_row", Pp},
                           {"seq_length", L},
                           {"seed", cfg.pack.seed},
                           {"inputs", files},
                           {"files", manifest_files},
                           {"packing", res.stats.to_json()}};
  write_file_atomic(out_dir / "manifest.json", manifest.dump(2) + "\n");
  spdlog::info("pack: done: {}", res.stats.summary());
  return res;
}

}  // namespace bert::data
