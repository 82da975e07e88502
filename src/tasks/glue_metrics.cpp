// GLUE metrics (accuracy, F1, Matthews correlation, Pearson, Spearman).
#include "bert/tasks/glue_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "bert/common/error.h"

namespace bert::tasks {

namespace {
void check_sizes(size_t a, size_t b) {
  if (a != b)
    throw UserError("got " + std::to_string(a) + " predictions for " + std::to_string(b) + " labelled examples");
  if (a == 0) throw UserError("no examples to score");
}
}  // namespace

double accuracy(const std::vector<int32_t>& preds, const std::vector<int32_t>& labels) {
  check_sizes(preds.size(), labels.size());
  size_t ok = 0;
  for (size_t i = 0; i < preds.size(); ++i) ok += preds[i] == labels[i];
  return static_cast<double>(ok) / static_cast<double>(preds.size());
}

double f1_binary(const std::vector<int32_t>& preds, const std::vector<int32_t>& labels, int32_t positive) {
  check_sizes(preds.size(), labels.size());
  double tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < preds.size(); ++i) {
    bool p = preds[i] == positive, l = labels[i] == positive;
    tp += p && l;
    fp += p && !l;
    fn += !p && l;
  }
  if (tp == 0) return 0.0;
  return 2 * tp / (2 * tp + fp + fn);
}

double matthews_corrcoef(const std::vector<int32_t>& preds, const std::vector<int32_t>& labels, int num_classes) {
  check_sizes(preds.size(), labels.size());
  // sklearn: C = confusion matrix; t_k = row sums (true), p_k = column sums (pred), c = trace, s = n.
  // mcc = (c*s - t.p) / sqrt((s^2 - p.p)(s^2 - t.t))
  std::vector<double> t(static_cast<size_t>(num_classes), 0), p(static_cast<size_t>(num_classes), 0);
  double c = 0, s = static_cast<double>(preds.size());
  for (size_t i = 0; i < preds.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes || preds[i] < 0 || preds[i] >= num_classes)
      throw UserError("label id out of range in Matthews correlation");
    t[static_cast<size_t>(labels[i])] += 1;
    p[static_cast<size_t>(preds[i])] += 1;
    c += preds[i] == labels[i];
  }
  double tp = 0, pp = 0, tt = 0;
  for (int k = 0; k < num_classes; ++k) {
    tp += t[static_cast<size_t>(k)] * p[static_cast<size_t>(k)];
    pp += p[static_cast<size_t>(k)] * p[static_cast<size_t>(k)];
    tt += t[static_cast<size_t>(k)] * t[static_cast<size_t>(k)];
  }
  double cov_ytyp = c * s - tp, cov_ypyp = s * s - pp, cov_ytyt = s * s - tt;
  if (cov_ypyp * cov_ytyt == 0) return 0.0;
  return cov_ytyp / std::sqrt(cov_ytyt * cov_ypyp);
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw UserError("got " + std::to_string(x.size()) + " predictions for " + std::to_string(y.size()) + " scores");
  if (x.size() < 2) throw UserError("Pearson correlation needs at least two examples");
  double n = static_cast<double>(x.size());
  double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return 0.0;  // constant input: undefined (scipy gives nan)
  return sxy / std::sqrt(sxx * syy);
}

std::vector<double> average_ranks(const std::vector<double>& x) {
  std::vector<size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  size_t i = 0;
  while (i < idx.size()) {
    size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    double rank = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = rank;
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  return pearson(average_ranks(x), average_ranks(y));
}

nlohmann::ordered_json glue_metrics(const GlueTaskSpec& task, const std::vector<int32_t>& preds,
                                    const std::vector<int32_t>& labels) {
  if (task.regression) throw UserError(task.name + " is a regression task; score it with glue_metrics_regression");
  nlohmann::ordered_json m;
  if (task.name == "cola") {
    m["mcc"] = matthews_corrcoef(preds, labels, task.num_labels());
  } else if (task.name == "mrpc" || task.name == "qqp") {
    double acc = accuracy(preds, labels), f1 = f1_binary(preds, labels, 1);
    m["acc"] = acc;
    m["f1"] = f1;
    m["acc_and_f1"] = (acc + f1) / 2;
  } else {
    m["acc"] = accuracy(preds, labels);
  }
  return m;
}

nlohmann::ordered_json glue_metrics_regression(const GlueTaskSpec& task, const std::vector<double>& preds,
                                               const std::vector<double>& labels) {
  if (!task.regression) throw UserError(task.name + " is a classification task; score it with glue_metrics");
  nlohmann::ordered_json m;
  double p = pearson(preds, labels), s = spearman(preds, labels);
  m["pearson"] = p;
  m["spearmanr"] = s;
  m["corr"] = (p + s) / 2;
  return m;
}

}  // namespace bert::tasks
