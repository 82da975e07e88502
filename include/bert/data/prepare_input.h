#pragma once
// Input side of `prepare`: resolving files/globs, a bounded-memory line reader, the scan that
// cuts the corpus into shards at document boundaries, and reading one shard's documents.
//
// Formats:
//   lines       Google's: one sentence per line, a blank (or whitespace-only) line ends a document.
//   paragraphs  one paragraph per line, split into sentences by split_sentences(); a wikitext
//               top-level heading (" = Title = ") ends a document and is dropped, deeper headings
//               (" = = Section = = ") are dropped, blank lines are ignored.
// In both formats the end of a file ends a document.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bert/data/instances.h"

namespace bert::data {

// Files named or matched (globs sorted), in the order given, duplicates dropped.
// UserError for a missing file or a glob that matches nothing.
std::vector<std::string> resolve_inputs(const std::vector<std::string>& patterns);

// Reads lines of one file between two byte offsets; a line may not exceed max_line_bytes
// (UserError naming file and line). Memory: one buffer of about max_line_bytes + 1 MiB.
class LineReader {
 public:
  LineReader(const std::string& path, uint64_t begin, uint64_t end, uint64_t max_line_bytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  // Next line without its '\n' (and '\r'); false at the end. `offset` is where the line starts.
  bool next(std::string_view& line, uint64_t& offset);
  // Where the line after the last one returned starts.
  uint64_t next_offset() const { return buf_offset_ + pos_; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  uint64_t end_, max_line_;
  std::string buf_;
  size_t pos_ = 0, len_ = 0;
  uint64_t buf_offset_ = 0;  // file offset of buf_[0]
  uint64_t line_no_ = 0;     // counted from `begin`
  bool eof_ = false;
};

struct FilePos {
  size_t file = 0;
  uint64_t offset = 0;
};

// One shard's slice of the corpus: [begin, end) across the files.
struct ShardRange {
  FilePos begin, end;
  uint64_t bytes = 0;
  uint64_t documents = 0;  // documents that start in the range (approximate for empty ones)
};

struct CorpusPlan {
  std::vector<std::string> files;
  std::vector<uint64_t> file_sizes;
  std::vector<ShardRange> shards;
  uint64_t total_bytes = 0;
  uint64_t total_lines = 0;
  uint64_t text_lines = 0;  // lines with anything but whitespace (headings excluded)
};

enum class InputFormat { lines, paragraphs };
InputFormat parse_input_format(const std::string& s);

// Scans every file once and cuts shards of about `target_bytes` of text at document boundaries.
// UserError for an empty corpus or an over-long line.
CorpusPlan plan_shards(const std::vector<std::string>& files, InputFormat format, uint64_t target_bytes,
                       uint64_t max_line_bytes);

// Tokenizer used by prepare: text -> ids (no [CLS]/[SEP]); adds skipped invalid UTF-8 bytes.
using EncodeFn = std::function<std::vector<int32_t>(std::string_view text, uint64_t* invalid_utf8_bytes)>;

struct ReadStats {
  uint64_t documents = 0, sentences = 0, tokens = 0, invalid_utf8_bytes = 0, bytes = 0;
};

// The non-empty documents of one shard, each a list of non-empty tokenized sentences.
// `on_bytes` (may be empty) is called with the bytes consumed as reading progresses.
std::vector<Document> read_shard_documents(const CorpusPlan& plan, const ShardRange& range, InputFormat format,
                                           uint64_t max_line_bytes, const EncodeFn& encode, ReadStats& stats,
                                           const std::function<void(uint64_t)>& on_bytes);

}  // namespace bert::data
