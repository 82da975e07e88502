// Corpus input for `prepare`: globs, a bounded line reader, shard planning, shard reading.
#include "bert/data/prepare_input.h"

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/data/sentence_split.h"

namespace bert::data {

namespace fs = std::filesystem;

std::vector<std::string> resolve_inputs(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& p) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) throw UserError("input " + p + " is a directory; pass its files or a glob such as " + p + "/*.txt");
    if (seen.insert(p).second) out.push_back(p);
  };
  for (const auto& pat : patterns) {
    bool is_glob = pat.find_first_of("*?[") != std::string::npos;
    if (!is_glob) {
      std::error_code ec;
      if (!fs::exists(pat, ec)) throw UserError("input file not found: " + pat);
      add(pat);
      continue;
    }
    glob_t g{};
    int rc = ::glob(pat.c_str(), 0, nullptr, &g);
    std::vector<std::string> matches;
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) matches.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (matches.empty()) throw UserError("no input files match " + pat);
    std::sort(matches.begin(), matches.end());
    for (auto& m : matches) add(m);
  }
  if (out.empty()) throw UserError("no input files; pass --input FILE or a glob");
  return out;
}

InputFormat parse_input_format(const std::string& s) {
  if (s == "lines") return InputFormat::lines;
  if (s == "paragraphs") return InputFormat::paragraphs;
  throw UserError("unknown --input-format '" + s + "'; use lines or paragraphs");
}

// ---- LineReader --------------------------------------------------------------------------------

LineReader::LineReader(const std::string& path, uint64_t begin, uint64_t end, uint64_t max_line_bytes)
    : path_(path), end_(end), max_line_(max_line_bytes) {
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) throw UserError("cannot read input " + path + ": " + std::strerror(errno));
  if (begin > 0 && std::fseek(f_, static_cast<long>(begin), SEEK_SET) != 0)
    throw UserError("cannot seek in input " + path + ": " + std::strerror(errno));
  buf_offset_ = begin;
  buf_.resize(max_line_ + (1 << 20));
}

LineReader::~LineReader() {
  if (f_) std::fclose(f_);
}

bool LineReader::next(std::string_view& line, uint64_t& offset) {
  while (true) {
    uint64_t line_start = buf_offset_ + pos_;
    if (line_start >= end_) return false;
    const char* base = buf_.data() + pos_;
    const void* nl = std::memchr(base, '\n', len_ - pos_);
    if (nl || (eof_ && pos_ < len_)) {
      size_t n = nl ? static_cast<size_t>(static_cast<const char*>(nl) - base) : len_ - pos_;
      if (n > max_line_)
        throw UserError("input " + path_ + ": line " + std::to_string(line_no_ + 1) + " is " + std::to_string(n) +
                        " bytes, over the " + std::to_string(max_line_) +
                        "-byte limit; is it a text file with line breaks? (raise --max-line-bytes if it is)");
      ++line_no_;
      offset = line_start;
      line = std::string_view(base, n);
      pos_ += n + (nl ? 1 : 0);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      return true;
    }
    if (eof_) return false;
    // No newline in what is buffered: move the partial line to the front and read more.
    if (len_ - pos_ > max_line_)
      throw UserError("input " + path_ + ": line " + std::to_string(line_no_ + 1) + " is longer than the " +
                      std::to_string(max_line_) +
                      "-byte limit; is it a text file with line breaks? (raise --max-line-bytes if it is)");
    std::memmove(buf_.data(), buf_.data() + pos_, len_ - pos_);
    buf_offset_ += pos_;
    len_ -= pos_;
    pos_ = 0;
    size_t got = std::fread(buf_.data() + len_, 1, buf_.size() - len_, f_);
    if (got == 0) {
      if (std::ferror(f_)) throw UserError("cannot read input " + path_ + ": " + std::strerror(errno));
      eof_ = true;
    }
    len_ += got;
  }
}

// ---- planning ----------------------------------------------------------------------------------

static bool is_blank(std::string_view s) {
  for (char c : s)
    if (!(c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v')) return false;
  return true;
}

CorpusPlan plan_shards(const std::vector<std::string>& files, InputFormat format, uint64_t target_bytes,
                       uint64_t max_line_bytes) {
  CorpusPlan plan;
  plan.files = files;
  for (const auto& f : files) {
    std::error_code ec;
    uint64_t sz = fs::file_size(f, ec);
    if (ec) throw UserError("cannot read input " + f + ": " + ec.message());
    plan.file_sizes.push_back(sz);
    plan.total_bytes += sz;
  }
  if (target_bytes == 0) target_bytes = 1;
  ShardRange cur;
  uint64_t consumed_before = 0;  // bytes of all earlier files
  bool cur_has_text = false;
  bool in_document = false;  // text seen since the last boundary
  // Cut when the current shard holds at least target_bytes and a document just ended.
  auto maybe_cut = [&](size_t file, uint64_t offset) {
    uint64_t pos = consumed_before + offset;
    uint64_t start = 0;
    for (size_t i = 0; i < cur.begin.file; ++i) start += plan.file_sizes[i];
    start += cur.begin.offset;
    if (cur_has_text && pos - start >= target_bytes) {
      cur.end = {file, offset};
      cur.bytes = pos - start;
      plan.shards.push_back(cur);
      cur = ShardRange{};
      cur.begin = {file, offset};
      cur_has_text = false;
    }
  };
  for (size_t fi = 0; fi < files.size(); ++fi) {
    LineReader reader(files[fi], 0, plan.file_sizes[fi], max_line_bytes);
    std::string_view line;
    uint64_t off = 0;
    while (reader.next(line, off)) {
      ++plan.total_lines;
      if (format == InputFormat::lines) {
        if (is_blank(line)) {
          if (in_document) ++cur.documents;
          in_document = false;
          // The boundary is after the blank line: cut at the next line's start.
          maybe_cut(fi, reader.next_offset());
        } else {
          in_document = true;
          cur_has_text = true;
          ++plan.text_lines;
        }
      } else {
        if (is_blank(line)) continue;
        if (is_wikitext_heading(line)) {
          if (is_wikitext_title(line)) {
            if (in_document) ++cur.documents;
            in_document = false;
            maybe_cut(fi, off);
          }
          continue;
        }
        in_document = true;
        cur_has_text = true;
        ++plan.text_lines;
      }
    }
    // End of file ends a document.
    if (in_document) ++cur.documents;
    in_document = false;
    consumed_before += plan.file_sizes[fi];
    if (fi + 1 < files.size()) maybe_cut(fi + 1, 0);
  }
  if (plan.text_lines == 0) {
    std::string names = files.size() == 1 ? files[0] : std::to_string(files.size()) + " input files (" + files[0] +
                                                          (files.size() > 2 ? ", ..., " : ", ") + files.back() + ")";
    throw UserError("the corpus is empty: " + names + " has no text lines (" +
                    (plan.total_bytes == 0 ? std::string("0 bytes") : "only blank lines or headings") +
                    "); check --input and --input-format");
  }
  if (cur_has_text || plan.shards.empty()) {
    cur.end = {files.size() - 1, plan.file_sizes.back()};
    uint64_t start = 0;
    for (size_t i = 0; i < cur.begin.file; ++i) start += plan.file_sizes[i];
    start += cur.begin.offset;
    cur.bytes = plan.total_bytes - start;
    plan.shards.push_back(cur);
  } else if (!plan.shards.empty()) {
    // Trailing whitespace only: give it to the last shard.
    plan.shards.back().end = {files.size() - 1, plan.file_sizes.back()};
  }
  return plan;
}

// ---- reading one shard -------------------------------------------------------------------------

std::vector<Document> read_shard_documents(const CorpusPlan& plan, const ShardRange& range, InputFormat format,
                                           uint64_t max_line_bytes, const EncodeFn& encode, ReadStats& stats,
                                           const std::function<void(uint64_t)>& on_bytes) {
  std::vector<Document> docs(1);
  auto end_document = [&]() {
    if (!docs.back().empty()) docs.emplace_back();
  };
  auto add_sentence = [&](std::string_view text) {
    std::vector<int32_t> ids = encode(text, &stats.invalid_utf8_bytes);
    if (ids.empty()) return;
    stats.tokens += ids.size();
    ++stats.sentences;
    docs.back().push_back(std::move(ids));
  };
  uint64_t reported = 0, pending = 0;
  for (size_t fi = range.begin.file; fi <= range.end.file && fi < plan.files.size(); ++fi) {
    uint64_t b = fi == range.begin.file ? range.begin.offset : 0;
    uint64_t e = fi == range.end.file ? range.end.offset : plan.file_sizes[fi];
    if (b >= e) continue;
    LineReader reader(plan.files[fi], b, e, max_line_bytes);
    std::string_view line;
    uint64_t off = 0;
    while (reader.next(line, off)) {
      uint64_t n = line.size() + 1;
      stats.bytes += n;
      pending += n;
      if (format == InputFormat::lines) {
        if (is_blank(line))
          end_document();
        else
          add_sentence(line);
      } else {
        if (is_blank(line)) {
        } else if (is_wikitext_heading(line)) {
          if (is_wikitext_title(line)) end_document();
        } else {
          std::string text = unescape_wikitext(line);
          for (const auto& s : split_sentences(text)) add_sentence(s);
        }
      }
      if (on_bytes && pending >= (1u << 20)) {
        on_bytes(pending);
        reported += pending;
        pending = 0;
      }
    }
    end_document();
  }
  if (docs.back().empty()) docs.pop_back();
  stats.documents = docs.size();
  if (on_bytes) on_bytes(range.bytes > reported ? range.bytes - reported : 0);
  return docs;
}

}  // namespace bert::data
