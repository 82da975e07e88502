#pragma once
// The model section: the fields of Google's and HF's bert_config.json.
#include <cstdint>
#include <string>

#include "bert/config/fields.h"

namespace bert {

struct ModelConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t pad_token_id = 0;
  // How to run the model, not what it is: never written to an HF config.json nor compared
  // between checkpoints (see is_runtime_model_field).
  std::string attention_impl = "auto";  // auto | sdpa | explicit (docs/model.md)
  bool gradient_checkpointing = false;  // recompute each encoder layer in backward

  void describe(config::FieldList& f) {
    f.add("vocab_size", vocab_size, "WordPiece vocabulary size").range(1, 10000000);
    f.add("hidden_size", hidden_size, "width of every layer").range(1, 65536);
    f.add("num_hidden_layers", num_hidden_layers, "transformer layers").range(1, 1024);
    f.add("num_attention_heads", num_attention_heads, "attention heads per layer").range(1, 1024);
    f.add("intermediate_size", intermediate_size, "feed-forward width").range(1, 1 << 20);
    f.add("hidden_act", hidden_act, "activation (gelu: erf form; gelu_new/gelu_tanh/gelu_pytorch_tanh: tanh form)")
        .one_of({"gelu", "gelu_new", "gelu_tanh", "gelu_pytorch_tanh", "relu", "tanh"});
    f.add("hidden_dropout_prob", hidden_dropout_prob, "dropout after embeddings/attention/FFN").range(0, 1);
    f.add("attention_probs_dropout_prob", attention_probs_dropout_prob, "dropout on attention probabilities")
        .range(0, 1);
    f.add("max_position_embeddings", max_position_embeddings, "longest sequence").range(1, 1 << 20);
    f.add("type_vocab_size", type_vocab_size, "segment (token type) ids").range(1, 1024);
    f.add("initializer_range", initializer_range, "stddev of the normal init").range(0, 10);
    f.add("layer_norm_eps", layer_norm_eps, "LayerNorm epsilon").range(0, 1);
    f.add("pad_token_id", pad_token_id, "id of [PAD]").range(0, 10000000);
    f.add("attention_impl", attention_impl,
          "attention kernel: auto (fused scaled_dot_product_attention on LibTorch >= 2.0, else explicit), sdpa, "
          "explicit (matmul + softmax)")
        .one_of({"auto", "sdpa", "explicit"});
    f.add("gradient_checkpointing", gradient_checkpointing,
          "recompute each encoder layer's forward in backward (less activation memory, about 1/3 more compute)");
  }
};

// Fields of ModelConfig that choose how the model runs rather than its architecture.
inline bool is_runtime_model_field(const std::string& key) {
  return key == "attention_impl" || key == "gradient_checkpointing";
}

}  // namespace bert
