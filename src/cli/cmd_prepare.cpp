// bert-train prepare: text corpus -> HDF5 pretraining shards with Google's create_pretraining_data
// algorithm (see docs/prepare.md). Flags map one to one onto bert::data::PrepareConfig.
#include <spdlog/spdlog.h>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/data/loader.h"
#include "bert/data/pack.h"
#include "bert/data/prepare.h"
#include "bert/text/tokenizer.h"
#include "command.h"

namespace bert::cli {

namespace {

struct PrepareArgs {
  data::PrepareConfig cfg;
  bool do_lower_case = false;
  bool cased = false;
  CLI::Option* shards_opt = nullptr;
  CLI::Option* shard_size_opt = nullptr;
  CLI::Option* workers_opt = nullptr;
  bool pack = false;
};

int run_prepare_cmd(PrepareArgs& a, const GlobalOptions& g) {
  apply_globals(g);
  if (a.do_lower_case && a.cased) throw UserError("--do-lower-case and --cased contradict each other; pass one");
  if (a.shards_opt->count() && a.shard_size_opt->count())
    throw UserError("--num-shards and --shard-size both set the shard count; pass one");
  auto& cfg = a.cfg;
  cfg.lower_case = !a.cased;
  if (!a.workers_opt->count() && g.threads_opt && g.threads_opt->count()) cfg.num_workers = g.threads;
  if (a.pack && cfg.no_masking) throw UserError("--pack needs masked instances; drop --no-masking");
  if (cfg.no_masking && cfg.whole_word_mask)
    spdlog::warn("prepare: --whole-word-mask has no effect with --no-masking");

  require_file(cfg.vocab, "vocab file (--vocab)");
  text::TokenizerOptions topts;
  topts.lower_case = cfg.lower_case;
  auto tokenizer = std::make_shared<text::FullTokenizer>(text::Vocab::load(cfg.vocab), topts);
  data::PrepareTokenizer tok;
  tok.vocab_tokens = tokenizer->vocab().tokens();
  tok.cls_id = tokenizer->vocab().cls_id();
  tok.sep_id = tokenizer->vocab().sep_id();
  tok.mask_id = tokenizer->vocab().mask_id();
  tok.encode = [tokenizer](std::string_view text, uint64_t* invalid) {
    text::TokenizerStats st;
    std::vector<int32_t> ids;
    tokenizer->encode_into(text, ids, &st);
    if (invalid) *invalid += st.invalid_utf8_bytes;
    return ids;
  };
  data::run_prepare(cfg, tok);
  if (a.pack) {  // the same pass as `shard --pack`, one packed file per shard, in <output-dir>/packed
    data::PackConfig p;
    for (const auto& f : data::resolve_shards(cfg.output_dir)) p.inputs.push_back(f.string());
    p.output_dir = (std::filesystem::path(cfg.output_dir) / "packed").string();
    p.compress = cfg.compress;
    data::run_pack(p);
    spdlog::info("prepare: packed shards in {} (train with --data-dir {})", p.output_dir, p.output_dir);
  }
  return 0;
}

Action setup_prepare(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("prepare", "text corpus -> HDF5 pretraining shards (Google's create_pretraining_data)");
  auto a = std::make_shared<PrepareArgs>();
  auto& c = a->cfg;
  sub->add_option("--input", c.inputs, "input text files or globs (quote globs)")->required()->expected(1, -1);
  sub->add_option("--vocab", c.vocab, "WordPiece vocab.txt")->required();
  sub->add_option("--output-dir", c.output_dir, "directory for shard_NNNNN.hdf5 and manifest.json")->required();
  sub->add_flag("--do-lower-case", a->do_lower_case, "lower-case and strip accents (the default; uncased vocab)");
  sub->add_flag("--cased", a->cased, "keep case and accents (cased vocab)");
  sub->add_option("--input-format", c.input_format,
                  "lines: one sentence per line, blank line between documents; paragraphs: one paragraph per "
                  "line, ' = Title = ' starts a document (wikitext)")
      ->check(CLI::IsMember({"lines", "paragraphs"}));
  sub->add_option("--max-seq-length", c.max_seq_length, "tokens per instance")->check(CLI::Range(8, 1 << 16));
  sub->add_option("--max-predictions-per-seq", c.max_predictions_per_seq, "masked positions per instance")
      ->check(CLI::Range(1, 1 << 16));
  sub->add_option("--masked-lm-prob", c.masked_lm_prob, "share of tokens masked")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--dupe-factor", c.dupe_factor, "passes over the corpus with different masks")
      ->check(CLI::Range(1, 1000));
  sub->add_option("--short-seq-prob", c.short_seq_prob, "probability of a shorter target length")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--random-seed,--seed", c.random_seed, "seed of every random choice")
      ->check(CLI::Range(int64_t{0}, INT64_MAX));
  sub->add_flag("--whole-word-mask", c.whole_word_mask, "mask whole words (a word's ## pieces together)");
  sub->add_flag("--no-masking", c.no_masking, "write unmasked sequences (no masked_lm_* datasets; mask on the fly)");
  a->workers_opt = sub->add_option("--num-workers", c.num_workers, "worker threads (0 = --threads, else all cores)")
                       ->check(CLI::Range(0, 1024));
  a->shards_opt =
      sub->add_option("--num-shards", c.num_shards, "number of output shards (0 = from --shard-size)")->check(CLI::Range(0, 1000000));
  a->shard_size_opt = sub->add_option("--shard-size", c.shard_size_mb, "MB of input text per shard (bounds memory)")
                          ->check(CLI::Range(0.000001, 1e6));
  sub->add_flag("--compress", c.compress, "gzip the HDF5 datasets");
  sub->add_flag("--pack", a->pack, "also write packed shards (3 sequences per row, docs/packing.md) to <output-dir>/packed");
  sub->add_option("--max-line-bytes", c.max_line_bytes, "longest input line accepted")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 34));
  return [a, &g]() { return run_prepare_cmd(*a, g); };
}

}  // namespace

BERT_COMMAND(prepare, 30, setup_prepare);

}  // namespace bert::cli
