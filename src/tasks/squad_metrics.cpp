// The official SQuAD v1.1 / v2.0 metrics, computed the way the official scripts compute them
// (same normalisation, same order of float additions) so that the printed numbers match.
#include "bert/tasks/squad_metrics.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "bert/common/error.h"
#include "bert/common/fs.h"
#include "bert/tasks/pytext.h"

namespace bert::tasks {

namespace {

bool is_ascii_punct(char32_t c) {  // string.punctuation
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

// re.sub(r'\b(a|an|the)\b', ' ', text)
U32String remove_articles(const U32String& t) {
  static const U32String articles[] = {U"a", U"an", U"the"};
  U32String out;
  out.reserve(t.size());
  size_t i = 0;
  while (i < t.size()) {
    bool at_boundary = i == 0 || !py_isword(t[i - 1]);
    bool matched = false;
    if (at_boundary) {
      for (const auto& a : articles) {
        size_t end = i + a.size();
        if (end <= t.size() && t.compare(i, a.size(), a) == 0 && (end == t.size() || !py_isword(t[end]))) {
          out.push_back(U' ');
          i = end;
          matched = true;
          break;
        }
      }
    }
    if (!matched) out.push_back(t[i++]);
  }
  return out;
}

std::vector<std::string> normalized_tokens(std::string_view s) { return py_split(normalize_answer(s)); }

// Counter(a) & Counter(b), summed.
size_t common_count(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::unordered_map<std::string, long> ca;
  for (const auto& t : a) ++ca[t];
  size_t same = 0;
  for (const auto& t : b) {
    auto it = ca.find(t);
    if (it != ca.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  return same;
}

double f1_from(size_t same, size_t n_pred, size_t n_gold) {
  double precision = 1.0 * static_cast<double>(same) / static_cast<double>(n_pred);
  double recall = 1.0 * static_cast<double>(same) / static_cast<double>(n_gold);
  return (2 * precision * recall) / (precision + recall);
}

const ordered_json& data_of(const ordered_json& dataset) {
  if (!dataset.is_object() || !dataset.contains("data") || !dataset["data"].is_array())
    throw UserError("SQuAD dataset has no \"data\" list; pass a SQuAD train/dev JSON file");
  return dataset["data"];
}

std::string answer_text(const ordered_json& v, const std::string& qid) {
  if (!v.is_string())
    throw UserError("prediction for question " + qid + " is not a string; predictions.json maps id -> answer text");
  return v.get<std::string>();
}

template <class F>
void for_each_qa(const ordered_json& dataset, F&& fn) {
  for (const auto& article : data_of(dataset))
    for (const auto& p : article.at("paragraphs"))
      for (const auto& qa : p.at("qas")) fn(qa);
}

// ordered_json looks keys up linearly; index a large object once.
std::unordered_map<std::string, const ordered_json*> index_object(const ordered_json& obj) {
  std::unordered_map<std::string, const ordered_json*> idx;
  idx.reserve(obj.size());
  for (auto it = obj.begin(); it != obj.end(); ++it) idx[it.key()] = &it.value();  // last duplicate wins
  return idx;
}

std::string version_of(const ordered_json& dataset) {
  if (!dataset.contains("version")) return "";
  const auto& v = dataset["version"];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string normalize_answer(std::string_view s) {
  U32String lowered = py_lower(utf8_decode(s));
  U32String no_punc;
  no_punc.reserve(lowered.size());
  for (char32_t c : lowered)
    if (!is_ascii_punct(c)) no_punc.push_back(c);
  U32String no_art = remove_articles(no_punc);
  auto words = py_split(std::u32string_view(no_art));
  U32String joined;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) joined.push_back(U' ');
    joined += words[i];
  }
  return utf8_encode(joined);
}

bool squad_exact_match(std::string_view prediction, std::string_view ground_truth) {
  return normalize_answer(prediction) == normalize_answer(ground_truth);
}

double squad_f1_v1(std::string_view prediction, std::string_view ground_truth) {
  auto p = normalized_tokens(prediction), g = normalized_tokens(ground_truth);
  size_t same = common_count(p, g);
  if (same == 0) return 0;
  return f1_from(same, p.size(), g.size());
}

double squad_f1_v2(std::string_view gold, std::string_view prediction) {
  std::vector<std::string> g = gold.empty() ? std::vector<std::string>{} : normalized_tokens(gold);
  std::vector<std::string> p = prediction.empty() ? std::vector<std::string>{} : normalized_tokens(prediction);
  size_t same = common_count(g, p);
  if (g.empty() || p.empty()) return g == p ? 1 : 0;
  if (same == 0) return 0;
  return f1_from(same, p.size(), g.size());
}

SquadEvalReport evaluate_squad_v1(const SquadEvalInput& in) {
  SquadEvalReport rep;
  std::string version = version_of(in.dataset);
  if (version != "1.1")
    rep.warnings.push_back("Evaluation expects v-1.1, but got dataset with v-" + version);
  if (!in.predictions.is_object())
    throw UserError("predictions file is not a JSON object mapping question id -> answer text");
  const auto preds = index_object(in.predictions);
  double f1 = 0, em = 0;
  long total = 0;
  for_each_qa(in.dataset, [&](const ordered_json& qa) {
    ++total;
    std::string qid = qa.at("id").get<std::string>();
    auto it = preds.find(qid);
    if (it == preds.end()) {
      rep.missing.push_back(qid);
      return;
    }
    std::string pred = answer_text(*it->second, qid);
    bool best_em = false;
    double best_f1 = 0;
    bool first = true;
    for (const auto& a : qa.at("answers")) {
      std::string gt = a.at("text").get<std::string>();
      bool e = squad_exact_match(pred, gt);
      double f = squad_f1_v1(pred, gt);
      best_em = first ? e : (best_em || e);
      best_f1 = first ? f : std::max(best_f1, f);
      first = false;
    }
    if (first) throw UserError("question " + qid + " has no answers; a SQuAD v1.1 dev set gives every question at least one");
    em += best_em ? 1 : 0;
    f1 += best_f1;
  });
  if (total == 0) throw UserError("SQuAD dataset has no questions");
  rep.metrics["exact_match"] = 100.0 * em / static_cast<double>(total);
  rep.metrics["f1"] = 100.0 * f1 / static_cast<double>(total);
  return rep;
}

SquadEvalReport evaluate_squad_v2(const SquadEvalInput& in) {
  SquadEvalReport rep;
  if (!in.predictions.is_object())
    throw UserError("predictions file is not a JSON object mapping question id -> answer text");
  bool have_na = !in.na_probs.is_null();
  if (have_na && !in.na_probs.is_object())
    throw UserError("no-answer probability file is not a JSON object mapping question id -> probability");

  const auto preds = index_object(in.predictions);
  const auto na_index = have_na ? index_object(in.na_probs) : std::unordered_map<std::string, const ordered_json*>{};
  // Dataset order, as the official script's dicts keep it.
  std::vector<std::string> qids;
  std::vector<bool> has_ans;
  std::vector<double> exact_raw, f1_raw;
  std::unordered_map<std::string, size_t> index;
  for_each_qa(in.dataset, [&](const ordered_json& qa) {
    std::string qid = qa.at("id").get<std::string>();
    std::vector<std::string> gold;
    bool any = false;
    for (const auto& a : qa.at("answers")) {
      any = true;
      std::string t = a.at("text").get<std::string>();
      if (!normalize_answer(t).empty()) gold.push_back(t);
    }
    if (gold.empty()) gold.push_back("");
    auto it = preds.find(qid);
    if (it == preds.end()) {
      rep.missing.push_back(qid);
      return;
    }
    std::string pred = answer_text(*it->second, qid);
    double e = 0, f = 0;
    for (size_t i = 0; i < gold.size(); ++i) {
      double ei = squad_exact_match(gold[i], pred) ? 1 : 0, fi = squad_f1_v2(gold[i], pred);
      e = i ? std::max(e, ei) : ei;
      f = i ? std::max(f, fi) : fi;
    }
    auto found = index.find(qid);
    if (found != index.end()) {  // a repeated id overwrites, as a dict would
      exact_raw[found->second] = e;
      f1_raw[found->second] = f;
      has_ans[found->second] = any;
      return;
    }
    index[qid] = qids.size();
    qids.push_back(qid);
    has_ans.push_back(any);
    exact_raw.push_back(e);
    f1_raw.push_back(f);
  });
  if (!rep.missing.empty())
    throw UserError("predictions lack " + std::to_string(rep.missing.size()) + " question id(s), e.g. " +
                    rep.missing.front() + "; the v2.0 evaluation needs a prediction (\"\" for no answer) for every question");
  if (qids.empty()) throw UserError("SQuAD dataset has no questions");

  auto na_prob = [&](const std::string& qid) -> double {
    if (!have_na) return 0.0;
    auto it = na_index.find(qid);
    if (it == na_index.end() || !it->second->is_number())
      throw UserError("no-answer probability file has no number for question " + qid);
    return it->second->get<double>();
  };
  std::vector<double> exact_t = exact_raw, f1_t = f1_raw;
  for (size_t i = 0; i < qids.size(); ++i) {
    if (na_prob(qids[i]) > in.na_prob_thresh) {
      exact_t[i] = has_ans[i] ? 0.0 : 1.0;
      f1_t[i] = has_ans[i] ? 0.0 : 1.0;
    }
  }
  auto add_block = [&](const std::string& prefix, int want /* -1 all, 1 has, 0 no */) {
    double e = 0, f = 0;
    long n = 0;
    for (size_t i = 0; i < qids.size(); ++i) {
      if (want >= 0 && has_ans[i] != (want == 1)) continue;
      e += exact_t[i];
      f += f1_t[i];
      ++n;
    }
    if (n == 0) return;
    rep.metrics[prefix + "exact"] = 100.0 * e / static_cast<double>(n);
    rep.metrics[prefix + "f1"] = 100.0 * f / static_cast<double>(n);
    rep.metrics[prefix + "total"] = n;
  };
  add_block("", -1);
  add_block("HasAns_", 1);
  add_block("NoAns_", 0);

  if (have_na) {
    // find_best_thresh: walk the questions in increasing no-answer probability (stable, in the
    // probability file's order) and keep the cut that scores best.
    std::vector<std::pair<std::string, double>> order;
    for (auto it = in.na_probs.begin(); it != in.na_probs.end(); ++it) {
      if (!it.value().is_number())
        throw UserError("no-answer probability for question " + it.key() + " is not a number");
      order.emplace_back(it.key(), it.value().get<double>());
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    long num_no_ans = static_cast<long>(std::count(has_ans.begin(), has_ans.end(), false));
    auto best = [&](const std::vector<double>& scores, const std::string& name) {
      double cur = static_cast<double>(num_no_ans), best_score = cur, best_thresh = 0.0;
      for (const auto& [qid, p] : order) {
        auto it = index.find(qid);
        if (it == index.end()) continue;
        size_t i = it->second;
        double diff = has_ans[i] ? scores[i] : (preds.at(qid)->get<std::string>().empty() ? 0 : -1);
        cur += diff;
        if (cur > best_score) {
          best_score = cur;
          best_thresh = p;
        }
      }
      rep.metrics["best_" + name] = 100.0 * best_score / static_cast<double>(qids.size());
      rep.metrics["best_" + name + "_thresh"] = best_thresh;
    };
    best(exact_raw, "exact");
    best(f1_raw, "f1");
  }
  return rep;
}

ordered_json load_json_file(const std::filesystem::path& path, std::string_view what) {
  require_file(path, what);
  std::string text = read_file(path);
  try {
    return ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    size_t byte = std::min<size_t>(e.byte, text.size());
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(byte ? byte - 1 : 0), '\n'));
    throw UserError(std::string(what) + " " + path.string() + " is not valid JSON (line " + std::to_string(line) +
                    ", byte " + std::to_string(e.byte) + "); fix or regenerate the file");
  }
}

}  // namespace bert::tasks
