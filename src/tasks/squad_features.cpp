// SQuAD examples -> windowed features, following Google's convert_examples_to_features.
#include "bert/tasks/squad_features.h"

#include "bert/common/error.h"
#include "bert/common/strings.h"

namespace bert::tasks {

std::vector<DocSpan> make_doc_spans(int64_t num_tokens, int64_t max_tokens, int64_t stride) {
  std::vector<DocSpan> spans;
  int64_t start = 0;
  while (start < num_tokens) {
    int64_t length = std::min(num_tokens - start, max_tokens);
    spans.push_back({start, length});
    if (start + length == num_tokens) break;
    start += std::min(length, stride);
  }
  return spans;
}

bool check_is_max_context(const std::vector<DocSpan>& spans, size_t cur, int64_t position) {
  double best_score = 0;
  int64_t best_index = -1;
  for (size_t i = 0; i < spans.size(); ++i) {
    int64_t end = spans[i].start + spans[i].length - 1;
    if (position < spans[i].start || position > end) continue;
    int64_t left = position - spans[i].start, right = end - position;
    double score = static_cast<double>(std::min(left, right)) + 0.01 * static_cast<double>(spans[i].length);
    if (best_index < 0 || score > best_score) {
      best_score = score;
      best_index = static_cast<int64_t>(i);
    }
  }
  return best_index == static_cast<int64_t>(cur);
}

std::pair<int64_t, int64_t> improve_answer_span(const std::vector<std::string>& doc_tokens, int64_t start,
                                                int64_t end, const TaskTokenizer& tok,
                                                const std::string& orig_answer_text) {
  std::string tok_answer = join(tok.tokenize(orig_answer_text), " ");
  for (int64_t s = start; s <= end; ++s) {
    for (int64_t e = end; e >= s; --e) {
      std::string span;
      for (int64_t i = s; i <= e; ++i) {
        if (i > s) span += ' ';
        span += doc_tokens[static_cast<size_t>(i)];
      }
      if (span == tok_answer) return {s, e};
    }
  }
  return {start, end};
}

std::vector<SquadFeature> convert_squad_examples(const std::vector<SquadExample>& examples,
                                                 const TaskTokenizer& tok, const SquadFeatureOptions& opts,
                                                 SquadFeatureStats* stats) {
  if (opts.doc_stride <= 0) throw UserError("doc_stride must be positive (got " + std::to_string(opts.doc_stride) + ")");
  if (opts.max_query_length <= 0)
    throw UserError("max_query_length must be positive (got " + std::to_string(opts.max_query_length) + ")");
  if (opts.max_seq_length - opts.max_query_length - 3 <= 0)
    throw UserError("max_seq_length " + std::to_string(opts.max_seq_length) + " leaves no room for the context after a " +
                    std::to_string(opts.max_query_length) + "-token question; raise --max-seq-length or lower --max-query-length");
  SquadFeatureStats st;
  std::vector<SquadFeature> features;
  int64_t unique_id = 1000000000;
  const size_t max_len = static_cast<size_t>(opts.max_seq_length);

  for (size_t ei = 0; ei < examples.size(); ++ei) {
    const SquadExample& ex = examples[ei];
    std::vector<std::string> query = tok.tokenize(ex.question_text);
    if (static_cast<int64_t>(query.size()) > opts.max_query_length) query.resize(static_cast<size_t>(opts.max_query_length));

    std::vector<int64_t> tok_to_orig, orig_to_tok;
    std::vector<std::string> all_doc_tokens;
    for (size_t i = 0; i < ex.doc_tokens.size(); ++i) {
      orig_to_tok.push_back(static_cast<int64_t>(all_doc_tokens.size()));
      for (auto& sub : tok.tokenize(ex.doc_tokens[i])) {
        tok_to_orig.push_back(static_cast<int64_t>(i));
        all_doc_tokens.push_back(std::move(sub));
      }
    }

    int64_t tok_start = -1, tok_end = -1;
    bool has_target = opts.is_training && !ex.is_impossible;
    if (has_target) {
      if (ex.start_position < 0 || ex.end_position < ex.start_position ||
          ex.end_position >= static_cast<int64_t>(ex.doc_tokens.size()))
        throw UserError("question " + ex.qas_id + " has no valid answer position; read it with is_training set");
      tok_start = orig_to_tok[static_cast<size_t>(ex.start_position)];
      if (ex.end_position < static_cast<int64_t>(ex.doc_tokens.size()) - 1)
        tok_end = orig_to_tok[static_cast<size_t>(ex.end_position + 1)] - 1;
      else
        tok_end = static_cast<int64_t>(all_doc_tokens.size()) - 1;
      std::tie(tok_start, tok_end) = improve_answer_span(all_doc_tokens, tok_start, tok_end, tok, ex.orig_answer_text);
    }

    int64_t max_tokens_for_doc = opts.max_seq_length - static_cast<int64_t>(query.size()) - 3;
    auto spans = make_doc_spans(static_cast<int64_t>(all_doc_tokens.size()), max_tokens_for_doc, opts.doc_stride);

    for (size_t si = 0; si < spans.size(); ++si) {
      const DocSpan& span = spans[si];
      SquadFeature f;
      f.example_index = static_cast<int64_t>(ei);
      f.doc_span_index = static_cast<int64_t>(si);
      f.tokens.reserve(max_len);
      f.tokens.push_back("[CLS]");
      f.segment_ids.push_back(0);
      for (const auto& q : query) {
        f.tokens.push_back(q);
        f.segment_ids.push_back(0);
      }
      f.tokens.push_back("[SEP]");
      f.segment_ids.push_back(0);
      f.token_to_orig_map.assign(f.tokens.size(), -1);
      f.token_is_max_context.assign(f.tokens.size(), 0);
      for (int64_t i = 0; i < span.length; ++i) {
        int64_t split = span.start + i;
        f.token_to_orig_map.push_back(tok_to_orig[static_cast<size_t>(split)]);
        f.token_is_max_context.push_back(check_is_max_context(spans, si, split) ? 1 : 0);
        f.tokens.push_back(all_doc_tokens[static_cast<size_t>(split)]);
        f.segment_ids.push_back(1);
      }
      f.tokens.push_back("[SEP]");
      f.segment_ids.push_back(1);
      f.token_to_orig_map.push_back(-1);
      f.token_is_max_context.push_back(0);

      f.input_ids.reserve(max_len);
      for (size_t i = 0; i < f.tokens.size(); ++i) {
        if (i == 0)
          f.input_ids.push_back(tok.cls_id);
        else if (i == query.size() + 1 || i + 1 == f.tokens.size())
          f.input_ids.push_back(tok.sep_id);
        else
          f.input_ids.push_back(tok.id_or_unk(f.tokens[i]));
      }
      f.input_mask.assign(f.input_ids.size(), 1);
      f.input_ids.resize(max_len, tok.pad_id);
      f.input_mask.resize(max_len, 0);
      f.segment_ids.resize(max_len, 0);

      if (has_target) {
        int64_t doc_start = span.start, doc_end = span.start + span.length - 1;
        bool out_of_span = !(tok_start >= doc_start && tok_end <= doc_end);
        if (out_of_span) {
          if (!opts.version_2 && !opts.keep_out_of_span_v1) {
            ++st.dropped_out_of_span;
            continue;
          }
          f.start_position = 0;
          f.end_position = 0;
          f.is_impossible = true;
        } else {
          int64_t doc_offset = static_cast<int64_t>(query.size()) + 2;
          f.start_position = tok_start - doc_start + doc_offset;
          f.end_position = tok_end - doc_start + doc_offset;
        }
      }
      if (opts.is_training && ex.is_impossible) {
        f.start_position = 0;
        f.end_position = 0;
        f.is_impossible = true;
      }
      f.unique_id = unique_id++;
      features.push_back(std::move(f));
    }
  }
  st.features = static_cast<int64_t>(features.size());
  if (stats) *stats = st;
  return features;
}

}  // namespace bert::tasks
