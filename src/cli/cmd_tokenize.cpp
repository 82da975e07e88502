// bert-train tokenize: one line of text in, one line of WordPiece tokens (or ids) out.
// Streams the input in blocks, tokenizes each block on --threads threads, and ends with a
// summary on stderr (lines, tokens, invalid UTF-8 bytes skipped).
#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/text/tokenizer.h"
#include "command.h"

namespace bert::cli {

namespace {

struct TokenizeArgs {
  std::string vocab;
  bool cased = false;
  bool ids = false;
  bool tokens = false;
  std::string input = "-";
  int bench = 0;
};

// --bench N: N timed passes over the whole input held in memory; prints "<tokens> <seconds>" per pass.
int run_bench(const TokenizeArgs& a, const GlobalOptions& g, const text::FullTokenizer& tok) {
  std::string data;
  if (a.input == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    data = ss.str();
  } else {
    data = read_file(a.input);
  }
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < data.size();) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) nl = data.size();
    lines.push_back(std::string_view(data).substr(pos, nl - pos));
    pos = nl + 1;
  }
  for (int r = 0; r < a.bench; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto ids = tok.encode_batch(lines, static_cast<int>(g.threads));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t n = 0;
    for (const auto& v : ids) n += v.size();
    std::printf("%llu %.6f\n", static_cast<unsigned long long>(n), s);
  }
  return 0;
}

int run_tokenize(const TokenizeArgs& a, const GlobalOptions& g) {
  text::TokenizerOptions opts;
  opts.lower_case = !a.cased;
  text::FullTokenizer tok(text::Vocab::load(a.vocab), opts);
  if (a.bench > 0) return run_bench(a, g, tok);

  std::FILE* in = stdin;
  double total_bytes = 0;
  if (a.input != "-") {
    std::error_code ec;
    if (!std::filesystem::exists(a.input, ec)) throw UserError("input file not found: " + a.input + "; check --input");
    if (std::filesystem::is_directory(a.input, ec))
      throw UserError("--input " + a.input + " is a directory; give a text file");
    in = std::fopen(a.input.c_str(), "rb");
    if (!in) throw UserError("cannot read " + a.input + ": " + std::strerror(errno));
    total_bytes = static_cast<double>(std::filesystem::file_size(a.input, ec));
  }

  constexpr size_t kBlock = 8 << 20;
  std::string buf, carry, out;
  std::vector<std::string_view> lines;
  text::TokenizerStats stats;
  uint64_t nlines = 0, ntokens = 0;
  double done_bytes = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto last_log = t0;
  std::vector<char> chunk(kBlock);
  bool eof = false;
  while (!eof) {
    size_t got = std::fread(chunk.data(), 1, chunk.size(), in);
    if (got < chunk.size()) {
      if (std::ferror(in)) throw RuntimeError("read error on " + a.input);
      eof = true;
    }
    done_bytes += static_cast<double>(got);
    buf.swap(carry);
    carry.clear();
    buf.append(chunk.data(), got);
    size_t cut = eof ? buf.size() : buf.rfind('\n');
    if (cut == std::string::npos) {  // no complete line yet
      carry.swap(buf);
      continue;
    }
    if (!eof) carry.assign(buf, cut + 1, std::string::npos);
    lines.clear();
    std::string_view body(buf.data(), eof ? buf.size() : cut + 1);
    size_t pos = 0;
    while (pos < body.size()) {
      size_t nl = body.find('\n', pos);
      if (nl == std::string_view::npos) nl = body.size();
      lines.push_back(body.substr(pos, nl - pos));
      pos = nl + 1;
    }
    auto encoded = tok.encode_batch(lines, static_cast<int>(g.threads), &stats);
    out.clear();
    char num[16];
    for (const auto& ids : encoded) {
      for (size_t k = 0; k < ids.size(); ++k) {
        if (k) out.push_back(' ');
        if (a.ids) {
          auto r = std::to_chars(num, num + sizeof num, ids[k]);
          out.append(num, r.ptr);
        } else {
          out.append(tok.vocab().token(ids[k]));
        }
      }
      out.push_back('\n');
      ntokens += ids.size();
    }
    nlines += lines.size();
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size())
      throw RuntimeError("cannot write the output (disk full or closed pipe?)");
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_log).count() > 5) {
      double el = std::chrono::duration<double>(now - t0).count();
      double rate = done_bytes / el;
      std::string eta = total_bytes > 0 ? ", ETA " + human_duration((total_bytes - done_bytes) / rate) : "";
      spdlog::info("tokenize: {} lines, {}B/s{}", human_count(static_cast<double>(nlines)), human_count(rate), eta);
      last_log = now;
    }
  }
  if (in != stdin) std::fclose(in);
  std::fflush(stdout);
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("tokenize: {} lines, {} tokens in {} ({} tokens/s); {} invalid UTF-8 bytes skipped", nlines, ntokens,
               human_duration(el), human_count(static_cast<double>(ntokens) / std::max(el, 1e-9)),
               stats.invalid_utf8_bytes);
  return 0;
}

Action setup_tokenize(CLI::App& app, GlobalOptions& g) {
  auto a = std::make_shared<TokenizeArgs>();
  auto* sub = app.add_subcommand("tokenize", "WordPiece-tokenize text: one line in, one line of tokens or ids out");
  sub->add_option("--vocab", a->vocab, "vocab.txt (one token per line)")->required();
  sub->add_flag("--cased", a->cased, "keep case and accents (for cased vocabs); default: lower-case + strip accents");
  auto* ids = sub->add_flag("--ids", a->ids, "print token ids");
  auto* toks = sub->add_flag("--tokens", a->tokens, "print tokens (the default)");
  ids->excludes(toks);
  sub->add_option("--input", a->input, "text file, or - for stdin");
  sub->add_option("--bench", a->bench, "time N passes over the input in memory; print '<tokens> <seconds>' per pass")
      ->check(CLI::Range(0, 1000));
  return [a, &g]() { return run_tokenize(*a, g); };
}

}  // namespace

BERT_COMMAND(tokenize, 20, setup_tokenize);

}  // namespace bert::cli
