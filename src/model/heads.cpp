// Task heads on BertModel: pretraining (MLM gathered at masked slots + NSP), question answering,
// sequence classification/regression. Names and conventions: include/bert/model/heads.h.
#include "bert/model/heads.h"

#include "bert/common/error.h"

namespace bert::model {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

// ---- pretraining heads -----------------------------------------------------------------------------

BertPredictionHeadTransformImpl::BertPredictionHeadTransformImpl(const ModelConfig& cfg) : act_(cfg.hidden_act) {
  check_activation(act_);
  dense = register_module("dense", nn::Linear(cfg.hidden_size, cfg.hidden_size));
  LayerNorm = register_module("LayerNorm", nn::LayerNorm(nn::LayerNormOptions({cfg.hidden_size}).eps(cfg.layer_norm_eps)));
}

torch::Tensor BertPredictionHeadTransformImpl::forward(const torch::Tensor& hidden) {
  return apply_layer_norm(LayerNorm, activation(act_, dense(hidden)));
}

BertLMPredictionHeadImpl::BertLMPredictionHeadImpl(const ModelConfig& cfg) {
  bias = register_parameter("bias", torch::zeros({cfg.vocab_size}));
  transform = register_module("transform", BertPredictionHeadTransform(cfg));
}

torch::Tensor BertLMPredictionHeadImpl::forward(const torch::Tensor& hidden, const torch::Tensor& decoder_weight) {
  return F::linear(transform(hidden), decoder_weight, bias);
}

BertPreTrainingHeadsImpl::BertPreTrainingHeadsImpl(const ModelConfig& cfg) {
  predictions = register_module("predictions", BertLMPredictionHead(cfg));
  seq_relationship = register_module("seq_relationship", nn::Linear(cfg.hidden_size, 2));
}

torch::Tensor valid_masked_slots(const torch::Tensor& masked_lm_positions) {
  if (masked_lm_positions.dim() != 2) throw UserError("masked_lm_positions must be [batch, max_predictions]");
  return (masked_lm_positions != 0).to(torch::kLong).cumprod(1).to(torch::kBool);
}

BertForPreTrainingImpl::BertForPreTrainingImpl(const ModelConfig& cfg) : cfg_(cfg) {
  bert = register_module("bert", BertModel(cfg, /*add_pooling_layer=*/true));
  cls = register_module("cls", BertPreTrainingHeads(cfg));
  init_bert_weights(*cls, cfg);
}

PreTrainingOutput BertForPreTrainingImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                                  const torch::Tensor& attention_mask,
                                                  const torch::Tensor& masked_lm_positions,
                                                  const PackedInputs& packed) {
  if (packed.defined() && !packed.cls_positions.defined())
    throw UserError("packed batch without cls_positions; the packed HDF5 file is incomplete");
  auto enc = bert(input_ids, token_type_ids, attention_mask, packed.position_ids, packed.sequence_index);
  const int64_t b = enc.sequence_output.size(0), s = enc.sequence_output.size(1);
  if (masked_lm_positions.dim() != 2 || masked_lm_positions.size(0) != b)
    throw UserError("masked_lm_positions must be [batch, max_predictions] with the batch of input_ids");
  // Cheap on the CPU; on accelerators the loader guarantees it (a check would synchronise every step).
  if (masked_lm_positions.is_cpu() && masked_lm_positions.numel() > 0) {
    auto [lo, hi] = torch::aminmax(masked_lm_positions);
    if (lo.item<int64_t>() < 0 || hi.item<int64_t>() >= s)
      throw UserError("masked_lm_positions must lie in [0, " + std::to_string(s) + "), got [" +
                      std::to_string(lo.item<int64_t>()) + ", " + std::to_string(hi.item<int64_t>()) +
                      "]; the data does not match --max-seq-length");
  }
  PreTrainingOutput out;
  out.mlm_valid = valid_masked_slots(masked_lm_positions);
  // Flat row index (batch * seq + position) of every valid slot, in (batch, slot) order.
  auto base = torch::arange(b, masked_lm_positions.options().dtype(torch::kLong)).mul_(s).unsqueeze(1);
  auto rows = (base + masked_lm_positions.to(torch::kLong)).masked_select(out.mlm_valid);
  auto gathered = enc.sequence_output.reshape({b * s, -1}).index_select(0, rows);
  out.mlm_logits = cls->predictions(gathered, bert->embeddings->word_embeddings->weight);
  if (packed.defined()) {
    // Each sequence's own [CLS], pooled: [batch, S, hidden] -> [batch * S, 2].
    auto cls_pos = packed.cls_positions.to(torch::kLong);
    if (cls_pos.dim() != 2 || cls_pos.size(0) != b) throw UserError("cls_positions must be [batch, S]");
    if (cls_pos.is_cpu() && cls_pos.numel() > 0) {
      auto [lo, hi] = torch::aminmax(cls_pos);
      if (lo.item<int64_t>() < 0 || hi.item<int64_t>() >= s)
        throw UserError("cls_positions must lie in [0, " + std::to_string(s) + "); the packed file is corrupt");
    }
    const int64_t h = enc.sequence_output.size(2);
    auto cls_hidden = enc.sequence_output.gather(1, cls_pos.unsqueeze(-1).expand({b, cls_pos.size(1), h}));
    out.nsp_logits = cls->seq_relationship(bert->pooler->pool(cls_hidden)).reshape({-1, 2});
  } else {
    out.nsp_logits = cls->seq_relationship(enc.pooled_output);
  }
  return out;
}

// Mean cross entropy over the rows whose label is >= 0, plus argmax-correct and count (fp32 math).
static void masked_ce(const torch::Tensor& logits, const torch::Tensor& labels, torch::Tensor& loss,
                      torch::Tensor& correct, torch::Tensor& count) {
  auto lg = logits.to(torch::kFloat);
  auto ok = labels >= 0;
  auto safe = labels.clamp_min(0);
  auto ce = F::cross_entropy(lg, safe, F::CrossEntropyFuncOptions().reduction(torch::kNone));
  count = ok.sum();
  loss = (ce * ok.to(torch::kFloat)).sum() / count.clamp_min(1).to(torch::kFloat);
  correct = (lg.argmax(-1).eq(safe) & ok).sum();
}

PreTrainingLoss BertForPreTrainingImpl::loss(const PreTrainingOutput& out, const torch::Tensor& masked_lm_ids,
                                             const torch::Tensor& next_sentence_labels) const {
  if (!masked_lm_ids.sizes().equals(out.mlm_valid.sizes()))
    throw UserError("masked_lm_ids must have the shape of masked_lm_positions");
  // Packed rows: [batch, S] labels line up with the [batch * S] rows of nsp_logits.
  const auto nsp_labels = next_sentence_labels.dim() == 2 ? next_sentence_labels.reshape({-1}) : next_sentence_labels;
  if (nsp_labels.dim() != 1 || nsp_labels.size(0) != out.nsp_logits.size(0))
    throw UserError("next_sentence_labels must be [batch] ([batch, S] for packed rows)");
  PreTrainingLoss r;
  auto mlm_labels = masked_lm_ids.to(torch::kLong).masked_select(out.mlm_valid);
  masked_ce(out.mlm_logits, mlm_labels, r.mlm_loss, r.mlm_correct, r.mlm_count);
  masked_ce(out.nsp_logits, nsp_labels.to(torch::kLong), r.nsp_loss, r.nsp_correct, r.nsp_count);
  r.total_loss = r.mlm_loss + r.nsp_loss;
  return r;
}

// ---- question answering ---------------------------------------------------------------------------

BertForQuestionAnsweringImpl::BertForQuestionAnsweringImpl(const ModelConfig& cfg) : cfg_(cfg) {
  bert = register_module("bert", BertModel(cfg, /*add_pooling_layer=*/false));
  qa_outputs = register_module("qa_outputs", nn::Linear(cfg.hidden_size, 2));
  init_bert_weights(*qa_outputs, cfg);
}

QuestionAnsweringOutput BertForQuestionAnsweringImpl::forward(const torch::Tensor& input_ids,
                                                              const torch::Tensor& token_type_ids,
                                                              const torch::Tensor& attention_mask) {
  auto logits = qa_outputs(bert(input_ids, token_type_ids, attention_mask).sequence_output).to(torch::kFloat);
  auto parts = logits.split(1, -1);
  return {parts[0].squeeze(-1).contiguous(), parts[1].squeeze(-1).contiguous()};
}

torch::Tensor BertForQuestionAnsweringImpl::loss(const QuestionAnsweringOutput& out,
                                                 const torch::Tensor& start_positions,
                                                 const torch::Tensor& end_positions) const {
  const int64_t s = out.start_logits.size(1);
  auto opts = F::CrossEntropyFuncOptions().ignore_index(s);
  auto fix = [&](const torch::Tensor& p) {
    auto q = p.to(torch::kLong).view({-1});
    return q.masked_fill(q.lt(0), s).clamp(0, s);
  };
  auto start = F::cross_entropy(out.start_logits, fix(start_positions), opts);
  auto end = F::cross_entropy(out.end_logits, fix(end_positions), opts);
  return (start + end) / 2;
}

// ---- sequence classification ----------------------------------------------------------------------

BertForSequenceClassificationImpl::BertForSequenceClassificationImpl(const ModelConfig& cfg, int64_t num_labels)
    : cfg_(cfg), num_labels_(num_labels) {
  if (num_labels < 1) throw UserError("num_labels must be >= 1 (1 = regression), got " + std::to_string(num_labels));
  bert = register_module("bert", BertModel(cfg, /*add_pooling_layer=*/true));
  dropout = register_module("dropout", nn::Dropout(cfg.hidden_dropout_prob));
  classifier = register_module("classifier", nn::Linear(cfg.hidden_size, num_labels));
  init_bert_weights(*classifier, cfg);
}

torch::Tensor BertForSequenceClassificationImpl::forward(const torch::Tensor& input_ids,
                                                         const torch::Tensor& token_type_ids,
                                                         const torch::Tensor& attention_mask) {
  auto pooled = bert(input_ids, token_type_ids, attention_mask).pooled_output;
  return classifier(dropout(pooled)).to(torch::kFloat);
}

torch::Tensor BertForSequenceClassificationImpl::loss(const torch::Tensor& logits, const torch::Tensor& labels) const {
  if (num_labels_ == 1) return F::mse_loss(logits.view({-1}), labels.to(torch::kFloat).view({-1}));
  return F::cross_entropy(logits.view({-1, num_labels_}), labels.to(torch::kLong).view({-1}));
}

// ---- naming helpers -------------------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> tied_aliases(const nn::Module& module) {
  if (dynamic_cast<const BertForPreTrainingImpl*>(&module))
    return {{"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"},
            {"cls.predictions.decoder.bias", "cls.predictions.bias"}};
  return {};
}

std::string hf_architecture(const nn::Module& module) {
  if (dynamic_cast<const BertForPreTrainingImpl*>(&module)) return "BertForPreTraining";
  if (dynamic_cast<const BertForQuestionAnsweringImpl*>(&module)) return "BertForQuestionAnswering";
  if (dynamic_cast<const BertForSequenceClassificationImpl*>(&module)) return "BertForSequenceClassification";
  if (dynamic_cast<const BertModelImpl*>(&module)) return "BertModel";
  return "";
}

}  // namespace bert::model
