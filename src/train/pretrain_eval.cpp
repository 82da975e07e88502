// Held-out masked-LM / NSP evaluation (see include/bert/train/pretrain_eval.h).
#include "bert/train/pretrain_eval.h"

#include <chrono>
#include <cstdio>

namespace bert::train {

config::json PretrainEvalResult::to_json() const {
  return {{"eval_sequences", sequences},       {"eval_masked_tokens", masked_tokens},
          {"eval_mlm_accuracy", mlm_accuracy}, {"eval_nsp_accuracy", nsp_accuracy},
          {"eval_mlm_loss", mlm_loss},         {"eval_nsp_loss", nsp_loss},
          {"eval_seconds", seconds}};
}

std::string PretrainEvalResult::summary() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "eval: %lld sequences, %lld masked tokens | mlm acc %.4f loss %.4f | nsp acc %.4f loss %.4f | %.1fs",
                static_cast<long long>(sequences), static_cast<long long>(masked_tokens), mlm_accuracy, mlm_loss,
                nsp_accuracy, nsp_loss, seconds);
  return buf;
}

PretrainEvalResult evaluate_pretraining(model::BertForPreTraining& model, BatchSource& source, int64_t batch,
                                        int64_t max_sequences, const Device& device, const std::string& precision) {
  auto t0 = std::chrono::steady_clock::now();
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  // Sums stay on the device: one host read at the end.
  auto opts = torch::TensorOptions().dtype(torch::kDouble).device(device.torch_device());
  torch::Tensor sums = torch::zeros({6}, opts);  // mlm correct, mlm count, nsp correct, nsp count, mlm loss, nsp loss
  PretrainEvalResult r;
  while (max_sequences == 0 || r.sequences < max_sequences) {
    auto b = source.next(batch);
    if (!b) break;
    // Real sequences per row (packed rows hold several); the limit counts sequences.
    torch::Tensor per_row = b->packed() ? b->sequence_index.amax(1) : torch::ones({b->size()}, torch::kLong);
    int64_t rows = b->size(), take = b->sequences();
    if (max_sequences > 0 && r.sequences + take > max_sequences) {
      auto cum = per_row.cumsum(0);
      rows = cum.le(max_sequences - r.sequences).sum().item<int64_t>();
      if (rows == 0) break;
      take = cum[rows - 1].item<int64_t>();
    }
    PretrainBatch d = (rows < b->size() ? b->narrow(rows) : *b).to(device.torch_device());
    model::PreTrainingLoss l;
    {
      AutocastScope autocast(device, precision);
      auto out = model->forward(d.input_ids, d.token_type_ids, d.attention_mask, d.masked_lm_positions,
                                d.packed_inputs());
      l = model->loss(out, d.masked_lm_ids, d.next_sentence_labels);
    }
    auto f = [](const torch::Tensor& t) { return t.to(torch::kDouble).reshape({}); };
    // the losses are means: weight them back into sums
    sums += torch::stack({f(l.mlm_correct), f(l.mlm_count), f(l.nsp_correct), f(l.nsp_count),
                          f(l.mlm_loss) * f(l.mlm_count), f(l.nsp_loss) * f(l.nsp_count)});
    r.sequences += take;
  }
  auto host = sums.cpu();
  auto h = host.accessor<double, 1>();
  r.masked_tokens = static_cast<int64_t>(h[1]);
  r.mlm_accuracy = h[1] > 0 ? h[0] / h[1] : 0;
  r.nsp_accuracy = h[3] > 0 ? h[2] / h[3] : 0;
  r.mlm_loss = h[1] > 0 ? h[4] / h[1] : 0;
  r.nsp_loss = h[3] > 0 ? h[5] / h[3] : 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (was_training) model->train();
  return r;
}

}  // namespace bert::train
