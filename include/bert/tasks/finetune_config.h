#pragma once
// The finetune section: which task, where its files are, and the task-specific knobs that
// NVIDIA's run_squad.py / run_glue.py and HF's run_qa.py / run_glue.py expose.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"

namespace bert {

struct FinetuneConfig {
  std::string task = "squad";
  std::string train_file;              // default: <data.data_dir>/<task's usual name>
  std::string dev_file;
  std::string test_file;               // predicted by the best model after training
  std::string vocab;                   // vocab.txt (default: next to the init checkpoint)
  bool do_lower_case = true;
  bool version_2_with_negative = false;
  int64_t doc_stride = 128;
  int64_t max_query_length = 64;
  int64_t max_answer_length = 30;
  int64_t n_best_size = 20;
  double null_score_diff_threshold = 0.0;
  int64_t eval_every_steps = 0;        // 0: evaluate after every epoch

  void describe(config::FieldList& f) {
    f.add("task", task, "fine-tuning task")
        .one_of({"squad", "mrpc", "rte", "cola", "sst2", "stsb", "qqp", "qnli", "mnli", "wnli"});
    f.add("train_file", train_file, "training file (SQuAD JSON or GLUE train.tsv)");
    f.add("dev_file", dev_file, "evaluation file (SQuAD JSON or GLUE dev.tsv)");
    f.add("test_file", test_file, "test file predicted by the best model (GLUE submission tsv, SQuAD predictions)");
    f.add("vocab", vocab, "WordPiece vocab.txt");
    f.add("do_lower_case", do_lower_case, "uncased model: lower-case and strip accents");
    f.add("version_2_with_negative", version_2_with_negative, "SQuAD v2.0 (questions without answers)");
    f.add("doc_stride", doc_stride, "SQuAD: stride between context windows").range(1, 1 << 16);
    f.add("max_query_length", max_query_length, "SQuAD: longest question in tokens").range(1, 1 << 16);
    f.add("max_answer_length", max_answer_length, "SQuAD: longest predicted answer in tokens").range(1, 1 << 16);
    f.add("n_best_size", n_best_size, "SQuAD: candidates kept per question").range(1, 1000);
    f.add("null_score_diff_threshold", null_score_diff_threshold, "SQuAD v2.0: predict no answer above this")
        .range(-1e6, 1e6);
    f.add("eval_every_steps", eval_every_steps, "evaluate every N steps (0 = every epoch)").min(0);
  }
};

}  // namespace bert
