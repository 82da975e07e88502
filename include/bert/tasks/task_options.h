#pragma once
// The finetune config section (FinetuneConfig) mapped onto the option structs of the SQuAD
// feature builder and post-processor, so the fine-tuning loop and the tests share one mapping.
#include <cstdint>

#include "bert/tasks/finetune_config.h"
#include "bert/tasks/squad.h"
#include "bert/tasks/squad_features.h"
#include "bert/tasks/squad_predict.h"

namespace bert::tasks {

inline SquadReadOptions squad_read_options(const FinetuneConfig& c, bool is_training) {
  SquadReadOptions o;
  o.is_training = is_training;
  o.version_2 = c.version_2_with_negative;
  return o;
}

inline SquadFeatureOptions squad_feature_options(const FinetuneConfig& c, int64_t max_seq_length, bool is_training) {
  SquadFeatureOptions o;
  o.max_seq_length = max_seq_length;
  o.doc_stride = c.doc_stride;
  o.max_query_length = c.max_query_length;
  o.is_training = is_training;
  o.version_2 = c.version_2_with_negative;
  return o;
}

inline SquadPredictOptions squad_predict_options(const FinetuneConfig& c) {
  SquadPredictOptions o;
  o.n_best_size = c.n_best_size;
  o.max_answer_length = c.max_answer_length;
  o.version_2 = c.version_2_with_negative;
  o.null_score_diff_threshold = c.null_score_diff_threshold;
  return o;
}

}  // namespace bert::tasks
