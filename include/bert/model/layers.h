#pragma once
// The BERT encoder as LibTorch modules. Every submodule is registered under the name HF
// transformers uses, so `named_parameters()` yields HF's state-dict keys in HF's order
// (e.g. "encoder.layer.0.attention.self.query.weight").
//
//   BertEmbeddings     word_embeddings, position_embeddings, token_type_embeddings, LayerNorm, dropout
//   BertSelfAttention  query, key, value           (multi-head attention, additive padding mask)
//   BertSelfOutput     dense, LayerNorm, dropout   (projection + residual + LayerNorm)
//   BertAttention      self, output
//   BertIntermediate   dense                       (+ hidden_act)
//   BertOutput         dense, LayerNorm, dropout
//   BertLayer          attention, intermediate, output
//   BertEncoder        layer.0 .. layer.N-1
//   BertPooler         dense                       (tanh of the first token)
//   BertModel          embeddings, encoder, pooler (pooler optional, as in HF)
//
// Shapes: input_ids/token_type_ids/attention_mask [batch, seq] (int64; mask 1 = token, 0 = padding),
// hidden states [batch, seq, hidden_size]. Packed rows (docs/packing.md) also pass position_ids and
// sequence_index [batch, seq]; the attention mask is then block-diagonal: a token attends only to
// the tokens of its own sequence.
//
// model.attention_impl picks the attention kernel (include/bert/device/compat.h);
// model.gradient_checkpointing recomputes each encoder layer in backward (training only): the
// layer runs without saving activations in forward and again, with the same dropout masks and
// autocast state, when its gradients are needed. Initialisation follows Google/HF: every Linear and
// Embedding weight ~ normal(0, initializer_range), biases 0, LayerNorm weight 1 and bias 0, and the
// [PAD] row of the word embeddings 0 (HF's padding_idx; that row also gets no gradient from the lookup).
#include <torch/torch.h>

#include <string>

#include "bert/device/compat.h"
#include "bert/model/model_config.h"

namespace bert::model {

// hidden_act by name: gelu (erf), gelu_new / gelu_tanh / gelu_pytorch_tanh (tanh form), relu, tanh.
torch::Tensor activation(const std::string& name, const torch::Tensor& x);
// UserError for a name activation() does not know.
void check_activation(const std::string& name);

// [batch, seq] 0/1 mask -> [batch, 1, 1, seq] additive mask in `dtype`: 0 where attended,
// -10000 where padded (the value Google's BERT and HF's eager path use).
torch::Tensor extended_attention_mask(const torch::Tensor& attention_mask, torch::ScalarType dtype);

// [batch, seq] sequence index (1..k per token, 0 = padding) -> [batch, 1, seq, seq] additive mask:
// 0 where query and key belong to the same sequence, -10000 elsewhere (padding keys included).
torch::Tensor block_diagonal_attention_mask(const torch::Tensor& sequence_index, torch::ScalarType dtype);

// LayerNorm in its parameters' dtype: under CPU autocast on LibTorch 1.13 a Linear hands it bf16
// while its weight is fp32, which layer_norm_cpu rejects; normalising in fp32 is also what CUDA
// autocast does.
torch::Tensor apply_layer_norm(torch::nn::LayerNorm& ln, const torch::Tensor& x);

// Google/NVIDIA weight-decay rule by parameter name: biases and LayerNorm parameters get no decay
// (true for "....bias", "....LayerNorm.weight", "cls.predictions.bias").
bool excluded_from_weight_decay(const std::string& parameter_name);

// Checks hidden_size % num_attention_heads, the activation name; UserError otherwise.
void validate_model_config(const ModelConfig& cfg);

class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit BertEmbeddingsImpl(const ModelConfig& cfg);
  // token_type_ids may be undefined (all zeros); position_ids undefined means 0..seq-1 in every row.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                        const torch::Tensor& position_ids = {});

  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertEmbeddings);

class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit BertSelfAttentionImpl(const ModelConfig& cfg);
  // mask: the additive mask from extended_attention_mask / block_diagonal_attention_mask (or
  // undefined). Returns [batch, seq, hidden].
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& mask);

  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};

 private:
  int64_t heads_, head_dim_;
  double dropout_p_;
  compat::AttentionImpl impl_;
};
TORCH_MODULE(BertSelfAttention);

class BertSelfOutputImpl : public torch::nn::Module {
 public:
  explicit BertSelfOutputImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& residual);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertSelfOutput);

class BertAttentionImpl : public torch::nn::Module {
 public:
  explicit BertAttentionImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& mask);

  BertSelfAttention self{nullptr};
  BertSelfOutput output{nullptr};
};
TORCH_MODULE(BertAttention);

class BertIntermediateImpl : public torch::nn::Module {
 public:
  explicit BertIntermediateImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& hidden);

  torch::nn::Linear dense{nullptr};

 private:
  std::string act_;
};
TORCH_MODULE(BertIntermediate);

class BertOutputImpl : public torch::nn::Module {
 public:
  explicit BertOutputImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& intermediate, const torch::Tensor& residual);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertOutput);

class BertLayerImpl : public torch::nn::Module {
 public:
  explicit BertLayerImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& mask);

  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertOutput output{nullptr};
};
TORCH_MODULE(BertLayer);

class BertEncoderImpl : public torch::nn::Module {
 public:
  explicit BertEncoderImpl(const ModelConfig& cfg);
  // With model.gradient_checkpointing, in training mode with gradients enabled, each layer is
  // checkpointed (see the header comment).
  torch::Tensor forward(torch::Tensor hidden, const torch::Tensor& mask);

  torch::nn::ModuleList layer{nullptr};

 private:
  bool checkpointing_;
};
TORCH_MODULE(BertEncoder);

class BertPoolerImpl : public torch::nn::Module {
 public:
  explicit BertPoolerImpl(const ModelConfig& cfg);
  // [batch, seq, hidden] -> tanh(dense(hidden[:, 0])) [batch, hidden]
  torch::Tensor forward(const torch::Tensor& sequence_output);
  // [..., hidden] hidden states of [CLS] tokens -> tanh(dense(x)) (packed rows pool each sequence)
  torch::Tensor pool(const torch::Tensor& cls_hidden);

  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertPooler);

struct BertModelOutput {
  torch::Tensor sequence_output;  // [batch, seq, hidden]
  torch::Tensor pooled_output;    // [batch, hidden]; undefined without a pooler
};

class BertModelImpl : public torch::nn::Module {
 public:
  // Builds and initialises the weights (uses the global torch RNG: seed it first).
  explicit BertModelImpl(const ModelConfig& cfg, bool add_pooling_layer = true);
  // token_type_ids and attention_mask may be undefined (zeros / all tokens attended). Packed rows:
  // position_ids and sequence_index [batch, seq]; the block-diagonal mask from sequence_index
  // replaces attention_mask, and pooled_output is left undefined (pool each [CLS] with pooler->pool).
  BertModelOutput forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                          const torch::Tensor& attention_mask = {}, const torch::Tensor& position_ids = {},
                          const torch::Tensor& sequence_index = {});
  const ModelConfig& config() const { return cfg_; }

  BertEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  BertPooler pooler{nullptr};

 private:
  ModelConfig cfg_;
};
TORCH_MODULE(BertModel);

// Google/HF initialisation of one module tree (see the header comment). The heads call it on
// themselves after construction; exposed for re-initialising a freshly added head.
void init_bert_weights(torch::nn::Module& module, const ModelConfig& cfg);

}  // namespace bert::model
