#pragma once
// GLUE metrics: accuracy; binary F1 (positive label "1") for MRPC and QQP; Matthews correlation
// for CoLA; Pearson and Spearman (ties get their average rank) for STS-B. Definitions as
// scikit-learn / scipy compute them, which the reference run_glue scripts use.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "bert/tasks/glue.h"

namespace bert::tasks {

double accuracy(const std::vector<int32_t>& preds, const std::vector<int32_t>& labels);
// F1 of class `positive`; 0 when there are no true positives.
double f1_binary(const std::vector<int32_t>& preds, const std::vector<int32_t>& labels, int32_t positive = 1);
// Multi-class Matthews correlation (sklearn's formula); 0 when undefined.
double matthews_corrcoef(const std::vector<int32_t>& preds, const std::vector<int32_t>& labels, int num_classes);
double pearson(const std::vector<double>& x, const std::vector<double>& y);
std::vector<double> average_ranks(const std::vector<double>& x);  // 1-based, ties averaged
double spearman(const std::vector<double>& x, const std::vector<double>& y);

// The task's metrics as HF's glue_compute_metrics names them:
//   cola {"mcc"}, sst-2/mnli/mnli-mm/qnli/rte/wnli {"acc"}, mrpc/qqp {"acc","f1","acc_and_f1"},
//   sts-b {"pearson","spearmanr","corr"}.
nlohmann::ordered_json glue_metrics(const GlueTaskSpec& task, const std::vector<int32_t>& preds,
                                    const std::vector<int32_t>& labels);
nlohmann::ordered_json glue_metrics_regression(const GlueTaskSpec& task, const std::vector<double>& preds,
                                               const std::vector<double>& labels);

}  // namespace bert::tasks
