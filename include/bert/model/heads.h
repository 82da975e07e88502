#pragma once
// The task heads on top of BertModel, with HF transformers' module names:
//
//   BertForPreTraining             bert.*, cls.predictions.{bias, transform.dense, transform.LayerNorm},
//                                  cls.seq_relationship
//   BertForQuestionAnswering       bert.* (no pooler, as in HF), qa_outputs
//   BertForSequenceClassification  bert.* (with pooler), classifier; regression (MSE) when num_labels == 1
//
// Tied decoder: HF's cls.predictions.decoder is a Linear whose weight IS
// bert.embeddings.word_embeddings.weight and whose bias IS cls.predictions.bias. Here the decoder
// is not a registered module: the head multiplies by the word-embedding weight directly and adds
// cls.predictions.bias, so `parameters()` lists every tensor once (what an optimizer needs). The
// two HF alias keys, cls.predictions.decoder.weight and cls.predictions.decoder.bias, appear in
// io::named_state() (HF's state-dict view) and are dropped when saving to safetensors, exactly as
// HF's save_pretrained drops them; see docs/checkpoint_format.md.
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "bert/model/layers.h"

namespace bert::model {

// ---- pretraining --------------------------------------------------------------------------------

// Masked-LM label convention (NVIDIA's HDF5 layout): masked_lm_positions [batch, max_pred] and
// masked_lm_ids [batch, max_pred] are zero padded; in each row the first position equal to 0 ends
// the list (position 0 is always [CLS] and never masked). A slot is also ignored when its label is
// negative (-1 / -100, the HF and old-NVIDIA "ignore" values). next_sentence_labels [batch]:
// 0 = B follows A, 1 = B is random (HF's convention); negative = ignored.
//
// Packed rows (docs/packing.md): the masked slots are relative to the row (the first 0 still ends
// the list), next_sentence_labels is [batch, S] with -1 where a row holds fewer than S sequences,
// and NSP is scored on each sequence's own [CLS] (gathered at cls_positions), so the losses and
// accuracies count real sequences only; masked-LM stays token-weighted.
struct PackedInputs {
  torch::Tensor position_ids;    // [batch, seq]: 0.. within each sequence
  torch::Tensor sequence_index;  // [batch, seq]: 1..k for the k-th sequence of the row, 0 = padding
  torch::Tensor cls_positions;   // [batch, S]: position of each sequence's [CLS] (0 when absent)
  bool defined() const { return sequence_index.defined(); }
};

struct PreTrainingOutput {
  torch::Tensor mlm_logits;  // [n_valid, vocab]: one row per valid masked slot, row-major over (batch, slot)
  torch::Tensor mlm_valid;   // [batch, max_pred] bool: which slots produced a row of mlm_logits
  torch::Tensor nsp_logits;  // [batch, 2]; packed: [batch * S, 2], row-major over (batch, sequence slot)
};

// Every value a step log needs. Losses are fp32 scalars (total_loss carries the graph);
// the counts are int64 scalars, kept on the device so that nothing synchronises until logged.
struct PreTrainingLoss {
  torch::Tensor total_loss;   // mlm_loss + nsp_loss
  torch::Tensor mlm_loss;     // mean cross entropy over the valid masked slots (0 when there are none)
  torch::Tensor nsp_loss;     // mean cross entropy over the valid NSP labels (0 when there are none)
  torch::Tensor mlm_correct, mlm_count;
  torch::Tensor nsp_correct, nsp_count;
};

class BertPredictionHeadTransformImpl : public torch::nn::Module {
 public:
  explicit BertPredictionHeadTransformImpl(const ModelConfig& cfg);
  // LayerNorm(act(dense(x)))
  torch::Tensor forward(const torch::Tensor& hidden);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};

 private:
  std::string act_;
};
TORCH_MODULE(BertPredictionHeadTransform);

class BertLMPredictionHeadImpl : public torch::nn::Module {
 public:
  explicit BertLMPredictionHeadImpl(const ModelConfig& cfg);
  // [n, hidden] -> [n, vocab] = transform(hidden) @ decoder_weight^T + bias, where decoder_weight is
  // the word-embedding weight [vocab, hidden] (passed in, so the tie survives .to() and loading).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& decoder_weight);

  torch::Tensor bias;  // "bias" [vocab], registered first as in HF
  BertPredictionHeadTransform transform{nullptr};
};
TORCH_MODULE(BertLMPredictionHead);

class BertPreTrainingHeadsImpl : public torch::nn::Module {
 public:
  explicit BertPreTrainingHeadsImpl(const ModelConfig& cfg);

  BertLMPredictionHead predictions{nullptr};
  torch::nn::Linear seq_relationship{nullptr};
};
TORCH_MODULE(BertPreTrainingHeads);

class BertForPreTrainingImpl : public torch::nn::Module {
 public:
  explicit BertForPreTrainingImpl(const ModelConfig& cfg);
  // Runs the encoder, gathers the hidden states of the valid masked slots only (before the
  // transform and the decoder, as NVIDIA does), and scores them. attention_mask may be undefined.
  // `packed` is empty for ordinary batches.
  PreTrainingOutput forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                            const torch::Tensor& attention_mask, const torch::Tensor& masked_lm_positions,
                            const PackedInputs& packed = {});
  // Losses and accuracies for an output of forward(); computed in fp32 whatever autocast did.
  // next_sentence_labels: [batch], or [batch, S] for packed rows.
  PreTrainingLoss loss(const PreTrainingOutput& out, const torch::Tensor& masked_lm_ids,
                       const torch::Tensor& next_sentence_labels) const;
  const ModelConfig& config() const { return cfg_; }

  BertModel bert{nullptr};
  BertPreTrainingHeads cls{nullptr};

 private:
  ModelConfig cfg_;
};
TORCH_MODULE(BertForPreTraining);

// [batch, max_pred] positions -> [batch, max_pred] bool: true up to (not including) the first 0.
torch::Tensor valid_masked_slots(const torch::Tensor& masked_lm_positions);

// ---- question answering ---------------------------------------------------------------------------

struct QuestionAnsweringOutput {
  torch::Tensor start_logits;  // [batch, seq] fp32
  torch::Tensor end_logits;    // [batch, seq] fp32
};

class BertForQuestionAnsweringImpl : public torch::nn::Module {
 public:
  explicit BertForQuestionAnsweringImpl(const ModelConfig& cfg);
  QuestionAnsweringOutput forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                                  const torch::Tensor& attention_mask = {});
  // (CE(start) + CE(end)) / 2 as HF; positions outside [0, seq) are clamped to seq and ignored.
  torch::Tensor loss(const QuestionAnsweringOutput& out, const torch::Tensor& start_positions,
                     const torch::Tensor& end_positions) const;
  const ModelConfig& config() const { return cfg_; }

  BertModel bert{nullptr};
  torch::nn::Linear qa_outputs{nullptr};

 private:
  ModelConfig cfg_;
};
TORCH_MODULE(BertForQuestionAnswering);

// ---- sequence classification / regression -------------------------------------------------------

class BertForSequenceClassificationImpl : public torch::nn::Module {
 public:
  BertForSequenceClassificationImpl(const ModelConfig& cfg, int64_t num_labels);
  // [batch, num_labels] fp32 logits (regression: [batch, 1] predictions).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                        const torch::Tensor& attention_mask = {});
  // num_labels == 1: MSE against float labels [batch]; otherwise cross entropy against int64 labels.
  torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& labels) const;
  int64_t num_labels() const { return num_labels_; }
  const ModelConfig& config() const { return cfg_; }

  BertModel bert{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear classifier{nullptr};

 private:
  ModelConfig cfg_;
  int64_t num_labels_;
};
TORCH_MODULE(BertForSequenceClassification);

// HF's alias keys for tensors that share storage with another entry of `module`'s state:
// (alias, target). Non-empty only for BertForPreTraining:
//   cls.predictions.decoder.weight -> bert.embeddings.word_embeddings.weight
//   cls.predictions.decoder.bias   -> cls.predictions.bias
std::vector<std::pair<std::string, std::string>> tied_aliases(const torch::nn::Module& module);

// The HF class name of a model built here ("BertForPreTraining", ...), "" for anything else.
std::string hf_architecture(const torch::nn::Module& module);

}  // namespace bert::model
