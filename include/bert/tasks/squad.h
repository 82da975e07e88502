#pragma once
// SQuAD v1.1 / v2.0 examples, read the way Google's run_squad.py reads them: the context is split
// on whitespace into doc tokens with a per-character (code point) word map; for training, the
// answer's character offset is mapped to word positions and an answer whose text is not found
// at its stated offset is reported and skipped.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace bert::tasks {

struct SquadAnswer {
  std::string text;
  int64_t answer_start = 0;  // in code points of the context
};

struct SquadExample {
  std::string qas_id;
  std::string question_text;
  std::string context;
  std::vector<std::string> doc_tokens;  // whitespace-separated words of the context
  std::vector<SquadAnswer> answers;     // every listed answer (dev sets list several)
  bool is_impossible = false;           // v2.0: the question has no answer in the context
  // Training target (first answer), in doc_tokens positions; -1 when none.
  std::string orig_answer_text;
  int64_t start_position = -1;
  int64_t end_position = -1;
};

struct SquadReadOptions {
  bool is_training = false;  // map answers to word positions, skip mismatching ones
  bool version_2 = false;    // honour is_impossible
};

struct SquadReadStats {
  std::string version;       // the dataset's "version" field
  int64_t questions = 0;
  int64_t skipped_bad_answer = 0;  // answer text not found at its offset (training only)
};

// Google's whitespace test: space, tab, CR, LF and U+202F.
bool squad_is_whitespace(char32_t c);
// Split `context` into words; char_to_word_offset[i] is the word holding code point i.
void squad_split_context(const std::string& context, std::vector<std::string>& doc_tokens,
                         std::vector<int64_t>& char_to_word_offset);

// UserError naming the file for a missing file, malformed JSON or missing fields.
std::vector<SquadExample> read_squad_examples(const std::filesystem::path& path, const SquadReadOptions& opts,
                                              SquadReadStats* stats = nullptr);

}  // namespace bert::tasks
