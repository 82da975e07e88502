// bert-train vocab: train a WordPiece vocab.txt on text files (HF WordPieceTrainer's algorithm).
#include <spdlog/spdlog.h>

#include <chrono>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/text/tokenizer.h"
#include "bert/text/vocab_trainer.h"
#include "command.h"

namespace bert::cli {

namespace {

struct VocabArgs {
  std::vector<std::string> inputs;
  std::string output_dir;
  bool cased = false;
  text::VocabTrainerOptions opts;
};

int run_vocab(VocabArgs a, const GlobalOptions& g) {
  a.opts.lower_case = !a.cased;
  a.opts.threads = static_cast<int>(g.threads);
  ensure_writable_dir(a.output_dir);
  auto t0 = std::chrono::steady_clock::now();
  text::VocabTrainerStats st;
  auto counts = text::count_words(a.inputs, a.opts, &st);
  spdlog::info("vocab: {} lines, {} words ({} distinct) from {} file(s), {}B", st.lines, st.words,
               st.distinct_words, a.inputs.size(), human_count(static_cast<double>(st.bytes)));
  auto tokens = text::train_wordpiece(counts, a.opts, &st);
  text::Vocab::from_tokens(tokens, "being written");  // what we write must load
  std::string out;
  for (const auto& t : tokens) out += t + "\n";
  fs::path path = fs::path(a.output_dir) / "vocab.txt";
  write_file_atomic(path, out);
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("vocab: wrote {} ({} tokens: {} special/unused, {} alphabet, {} merges) in {}; {} invalid UTF-8 "
               "bytes skipped",
               path.string(), tokens.size(), text::special_tokens().size() + a.opts.unused, st.alphabet, st.merges,
               human_duration(el), st.invalid_utf8_bytes);
  if (tokens.size() < a.opts.vocab_size)
    spdlog::info("vocab: stopped below --vocab-size {}: no pair occurs --min-frequency {} times any more",
                 a.opts.vocab_size, a.opts.min_frequency);
  return 0;
}

Action setup_vocab(CLI::App& app, GlobalOptions& g) {
  auto a = std::make_shared<VocabArgs>();
  auto* sub = app.add_subcommand("vocab", "train a WordPiece vocab.txt on text files");
  sub->add_option("--input", a->inputs, "text files (one or more)")->required()->expected(1, -1);
  sub->add_option("--output-dir", a->output_dir, "directory for vocab.txt")->required();
  sub->add_option("--vocab-size", a->opts.vocab_size, "total tokens, specials and [unusedN] included")
      ->check(CLI::Range(size_t(6), size_t(10000000)));
  sub->add_option("--min-frequency", a->opts.min_frequency, "merge only pairs seen at least this often")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 62));
  sub->add_flag("--cased", a->cased, "keep case and accents; default: lower-case + strip accents");
  sub->add_option("--unused", a->opts.unused, "[unusedN] slots after the specials, for later additions")
      ->check(CLI::Range(size_t(0), size_t(100000)));
  sub->add_option("--limit-alphabet", a->opts.limit_alphabet, "keep the N most frequent characters (0 = all)");
  return [a, &g]() { return run_vocab(*a, g); };
}

}  // namespace

BERT_COMMAND(vocab, 21, setup_vocab);

}  // namespace bert::cli
