// SQuAD logits -> answers, following Google's write_predictions / get_final_text.
#include "bert/tasks/squad_predict.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/common/strings.h"
#include "bert/tasks/pytext.h"

namespace bert::tasks {

namespace {

// Remove spaces; ns_to_s[i] is the position in `text` of the i-th kept character.
U32String strip_spaces(const U32String& text, std::vector<size_t>& ns_to_s) {
  U32String ns;
  ns_to_s.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == U' ') continue;
    ns_to_s.push_back(i);
    ns.push_back(text[i]);
  }
  return ns;
}

struct Prelim {
  size_t feature_index;
  int64_t start_index, end_index;
  double start_logit, end_logit;
};

}  // namespace

std::string get_final_text(const std::string& pred_text, const std::string& orig_text,
                           const BasicTokenizeFn& basic_tokenize) {
  U32String orig = utf8_decode(orig_text);
  U32String tok = utf8_decode(join(basic_tokenize(orig_text), " "));
  U32String pred = utf8_decode(pred_text);
  size_t start = tok.find(pred);
  if (start == U32String::npos) return orig_text;
  size_t end = start + pred.size() - 1;
  if (pred.empty()) return orig_text;

  std::vector<size_t> orig_ns_to_s, tok_ns_to_s;
  U32String orig_ns = strip_spaces(orig, orig_ns_to_s);
  U32String tok_ns = strip_spaces(tok, tok_ns_to_s);
  if (orig_ns.size() != tok_ns.size()) return orig_text;

  std::unordered_map<size_t, size_t> tok_s_to_ns;
  for (size_t i = 0; i < tok_ns_to_s.size(); ++i) tok_s_to_ns[tok_ns_to_s[i]] = i;

  auto map_pos = [&](size_t pos, size_t& out) {
    auto it = tok_s_to_ns.find(pos);
    if (it == tok_s_to_ns.end() || it->second >= orig_ns_to_s.size()) return false;
    out = orig_ns_to_s[it->second];
    return true;
  };
  size_t orig_start = 0, orig_end = 0;
  if (!map_pos(start, orig_start)) return orig_text;
  if (!map_pos(end, orig_end)) return orig_text;
  if (orig_end < orig_start) return orig_text;
  return utf8_encode(std::u32string_view(orig).substr(orig_start, orig_end - orig_start + 1));
}

std::vector<int64_t> best_indexes(const std::vector<float>& logits, int64_t n) {
  std::vector<int64_t> idx(logits.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
  });
  if (static_cast<int64_t>(idx.size()) > n) idx.resize(static_cast<size_t>(n));
  return idx;
}

std::vector<double> softmax(const std::vector<double>& scores) {
  if (scores.empty()) return {};
  double max_score = *std::max_element(scores.begin(), scores.end());
  std::vector<double> exps;
  double total = 0;
  for (double s : scores) {
    double x = std::exp(s - max_score);
    exps.push_back(x);
    total += x;
  }
  for (double& x : exps) x /= total;
  return exps;
}

std::vector<SquadPrediction> compute_squad_predictions(const std::vector<SquadExample>& examples,
                                                       const std::vector<SquadFeature>& features,
                                                       const std::vector<SquadRawResult>& results,
                                                       const SquadPredictOptions& opts,
                                                       const BasicTokenizeFn& basic_tokenize) {
  std::vector<std::vector<const SquadFeature*>> by_example(examples.size());
  for (const auto& f : features) {
    if (f.example_index < 0 || static_cast<size_t>(f.example_index) >= examples.size())
      throw RuntimeError("SQuAD feature " + std::to_string(f.unique_id) + " points past the examples");
    by_example[static_cast<size_t>(f.example_index)].push_back(&f);
  }
  std::unordered_map<int64_t, const SquadRawResult*> by_id;
  for (const auto& r : results) by_id[r.unique_id] = &r;

  std::vector<SquadPrediction> out;
  out.reserve(examples.size());
  for (size_t ei = 0; ei < examples.size(); ++ei) {
    const SquadExample& ex = examples[ei];
    const auto& feats = by_example[ei];
    std::vector<Prelim> prelim;
    double score_null = 1000000;
    size_t min_null_feature = 0;
    double null_start = 0, null_end = 0;
    for (size_t fi = 0; fi < feats.size(); ++fi) {
      const SquadFeature& f = *feats[fi];
      auto it = by_id.find(f.unique_id);
      if (it == by_id.end())
        throw RuntimeError("no model output for SQuAD feature " + std::to_string(f.unique_id) + " (question " + ex.qas_id + ")");
      const SquadRawResult& r = *it->second;
      if (r.start_logits.empty() || r.end_logits.empty())
        throw RuntimeError("empty logits for SQuAD feature " + std::to_string(f.unique_id));
      auto starts = best_indexes(r.start_logits, opts.n_best_size);
      auto ends = best_indexes(r.end_logits, opts.n_best_size);
      if (opts.version_2) {
        double null_score = static_cast<double>(r.start_logits[0]) + static_cast<double>(r.end_logits[0]);
        if (null_score < score_null) {
          score_null = null_score;
          min_null_feature = fi;
          null_start = r.start_logits[0];
          null_end = r.end_logits[0];
        }
      }
      const int64_t ntok = static_cast<int64_t>(f.tokens.size());
      for (int64_t s : starts) {
        for (int64_t e : ends) {
          if (s >= ntok || e >= ntok) continue;
          if (f.token_to_orig_map[static_cast<size_t>(s)] < 0 || f.token_to_orig_map[static_cast<size_t>(e)] < 0) continue;
          if (!f.token_is_max_context[static_cast<size_t>(s)]) continue;
          if (e < s) continue;
          if (e - s + 1 > opts.max_answer_length) continue;
          prelim.push_back({fi, s, e, r.start_logits[static_cast<size_t>(s)], r.end_logits[static_cast<size_t>(e)]});
        }
      }
    }
    if (opts.version_2) prelim.push_back({min_null_feature, 0, 0, null_start, null_end});
    std::stable_sort(prelim.begin(), prelim.end(), [](const Prelim& a, const Prelim& b) {
      return a.start_logit + a.end_logit > b.start_logit + b.end_logit;
    });

    SquadPrediction pred;
    pred.qas_id = ex.qas_id;
    std::set<std::string> seen;
    for (const auto& p : prelim) {
      if (static_cast<int64_t>(pred.nbest.size()) >= opts.n_best_size) break;
      const SquadFeature& f = *feats[p.feature_index];
      std::string final_text;
      if (p.start_index > 0) {
        std::string tok_text;
        for (int64_t i = p.start_index; i <= p.end_index; ++i) {
          if (i > p.start_index) tok_text += ' ';
          tok_text += f.tokens[static_cast<size_t>(i)];
        }
        // De-tokenise WordPiece: " ##" and "##" removed, whitespace collapsed.
        auto replace_all = [](std::string& s, const std::string& from) {
          size_t pos = 0;
          while ((pos = s.find(from, pos)) != std::string::npos) s.erase(pos, from.size());
        };
        replace_all(tok_text, " ##");
        replace_all(tok_text, "##");
        tok_text = join(py_split(std::string_view(tok_text)), " ");
        int64_t orig_start = f.token_to_orig_map[static_cast<size_t>(p.start_index)];
        int64_t orig_end = f.token_to_orig_map[static_cast<size_t>(p.end_index)];
        std::vector<std::string> orig_tokens(ex.doc_tokens.begin() + orig_start, ex.doc_tokens.begin() + orig_end + 1);
        final_text = get_final_text(tok_text, join(orig_tokens, " "), basic_tokenize);
        if (seen.count(final_text)) continue;
        seen.insert(final_text);
      } else {
        final_text = "";
        seen.insert(final_text);
      }
      pred.nbest.push_back({final_text, 0, p.start_logit, p.end_logit});
    }
    if (opts.version_2 && !seen.count("")) pred.nbest.push_back({"", 0, null_start, null_end});
    if (pred.nbest.empty()) pred.nbest.push_back({"empty", 0, 0.0, 0.0});

    std::vector<double> totals;
    const NbestEntry* best_non_null = nullptr;
    for (const auto& e : pred.nbest) {
      totals.push_back(e.start_logit + e.end_logit);
      if (!best_non_null && !e.text.empty()) best_non_null = &e;
    }
    auto probs = softmax(totals);
    for (size_t i = 0; i < pred.nbest.size(); ++i) pred.nbest[i].probability = probs[i];

    if (!opts.version_2) {
      pred.text = pred.nbest[0].text;
    } else if (!best_non_null) {
      // Every candidate is the null answer (Google's code would fail here): answer "".
      pred.null_score_diff = 0;
      pred.text = "";
    } else {
      pred.null_score_diff = score_null - best_non_null->start_logit - best_non_null->end_logit;
      pred.text = pred.null_score_diff > opts.null_score_diff_threshold ? "" : best_non_null->text;
    }
    out.push_back(std::move(pred));
  }
  return out;
}

nlohmann::ordered_json predictions_json(const std::vector<SquadPrediction>& preds) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& p : preds) j[p.qas_id] = p.text;
  return j;
}

nlohmann::ordered_json nbest_json(const std::vector<SquadPrediction>& preds) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& p : preds) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& e : p.nbest) {
      nlohmann::ordered_json item;
      item["text"] = e.text;
      item["probability"] = e.probability;
      item["start_logit"] = e.start_logit;
      item["end_logit"] = e.end_logit;
      list.push_back(std::move(item));
    }
    j[p.qas_id] = std::move(list);
  }
  return j;
}

nlohmann::ordered_json null_odds_json(const std::vector<SquadPrediction>& preds) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& p : preds) j[p.qas_id] = p.null_score_diff;
  return j;
}

void write_squad_predictions(const std::vector<SquadPrediction>& preds, const std::filesystem::path& dir,
                             bool version_2) {
  ensure_writable_dir(dir);
  write_file_atomic(dir / "predictions.json", py_json_dumps(predictions_json(preds), 4) + "\n");
  write_file_atomic(dir / "nbest_predictions.json", py_json_dumps(nbest_json(preds), 4) + "\n");
  if (version_2) write_file_atomic(dir / "null_odds.json", py_json_dumps(null_odds_json(preds), 4) + "\n");
}

}  // namespace bert::tasks
