// The BERT encoder modules (see include/bert/model/layers.h for names, shapes and init).
#include "bert/model/layers.h"

#include "bert/common/error.h"
#include "bert/device/compat.h"

namespace bert::model {

namespace nn = torch::nn;

// ---- helpers ------------------------------------------------------------------------------------

torch::Tensor activation(const std::string& name, const torch::Tensor& x) {
  if (name == "gelu") return torch::gelu(x);
  if (name == "gelu_new" || name == "gelu_tanh" || name == "gelu_pytorch_tanh") return torch::gelu(x, "tanh");
  if (name == "relu") return torch::relu(x);
  if (name == "tanh") return torch::tanh(x);
  throw UserError("unknown hidden_act '" + name + "'; use gelu, gelu_new, gelu_tanh, relu or tanh");
}

void check_activation(const std::string& name) { activation(name, torch::zeros({1})); }

torch::Tensor extended_attention_mask(const torch::Tensor& attention_mask, torch::ScalarType dtype) {
  if (attention_mask.dim() != 2)
    throw UserError("attention_mask must be [batch, seq], got " + std::to_string(attention_mask.dim()) + " dims");
  auto keep = attention_mask.to(dtype).unsqueeze(1).unsqueeze(2);  // [b, 1, 1, s]
  return (1.0 - keep) * -10000.0;
}

torch::Tensor block_diagonal_attention_mask(const torch::Tensor& sequence_index, torch::ScalarType dtype) {
  if (sequence_index.dim() != 2)
    throw UserError("sequence_index must be [batch, seq], got " + std::to_string(sequence_index.dim()) + " dims");
  auto q = sequence_index.unsqueeze(2), k = sequence_index.unsqueeze(1);  // [b, s, 1], [b, 1, s]
  auto keep = (q.eq(k) & k.ne(0)).to(dtype).unsqueeze(1);              // [b, 1, s, s]
  return (1.0 - keep) * -10000.0;
}

torch::Tensor apply_layer_norm(nn::LayerNorm& ln, const torch::Tensor& x) {
  const auto want = ln->weight.scalar_type();
  return ln(x.scalar_type() == want ? x : x.to(want));
}

bool excluded_from_weight_decay(const std::string& name) {
  auto ends = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends("bias") || name.find("LayerNorm") != std::string::npos;
}

void validate_model_config(const ModelConfig& cfg) {
  if (cfg.hidden_size % cfg.num_attention_heads != 0)
    throw UserError("model.hidden_size (" + std::to_string(cfg.hidden_size) +
                    ") must be a multiple of model.num_attention_heads (" +
                    std::to_string(cfg.num_attention_heads) + ")");
  check_activation(cfg.hidden_act);
}

static nn::LayerNorm make_layer_norm(const ModelConfig& cfg) {
  return nn::LayerNorm(nn::LayerNormOptions({cfg.hidden_size}).eps(cfg.layer_norm_eps));
}

static void init_module(nn::Module& m, const ModelConfig& cfg) {
  if (auto* lin = m.as<nn::Linear>()) {
    lin->weight.normal_(0.0, cfg.initializer_range);
    if (lin->bias.defined()) lin->bias.zero_();
  } else if (auto* emb = m.as<nn::Embedding>()) {
    emb->weight.normal_(0.0, cfg.initializer_range);
    if (auto pad = emb->options.padding_idx()) emb->weight[*pad].zero_();
  } else if (auto* ln = m.as<nn::LayerNorm>()) {
    ln->weight.fill_(1.0);
    ln->bias.zero_();
  }
}

// Called from constructors, where `module` is not yet owned by a shared_ptr: visit it by reference.
void init_bert_weights(nn::Module& module, const ModelConfig& cfg) {
  torch::NoGradGuard no_grad;
  init_module(module, cfg);
  for (auto& m : module.modules(/*include_self=*/false)) init_module(*m, cfg);
}

// ---- embeddings ---------------------------------------------------------------------------------

BertEmbeddingsImpl::BertEmbeddingsImpl(const ModelConfig& cfg) {
  auto word = nn::EmbeddingOptions(cfg.vocab_size, cfg.hidden_size);
  if (cfg.pad_token_id >= 0 && cfg.pad_token_id < cfg.vocab_size) word.padding_idx(cfg.pad_token_id);
  word_embeddings = register_module("word_embeddings", nn::Embedding(word));
  position_embeddings = register_module("position_embeddings",
                                        nn::Embedding(cfg.max_position_embeddings, cfg.hidden_size));
  token_type_embeddings = register_module("token_type_embeddings",
                                          nn::Embedding(cfg.type_vocab_size, cfg.hidden_size));
  LayerNorm = register_module("LayerNorm", make_layer_norm(cfg));
  dropout = register_module("dropout", nn::Dropout(cfg.hidden_dropout_prob));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                          const torch::Tensor& position_ids) {
  const int64_t seq = input_ids.size(1);
  if (seq > position_embeddings->weight.size(0))
    throw UserError("sequence length " + std::to_string(seq) + " exceeds model.max_position_embeddings (" +
                    std::to_string(position_embeddings->weight.size(0)) + ")");
  if (input_ids.is_cpu() && input_ids.numel() > 0) {  // on accelerators the loader guarantees it
    auto [lo, hi] = torch::aminmax(input_ids);
    if (lo.item<int64_t>() < 0 || hi.item<int64_t>() >= word_embeddings->weight.size(0))
      throw UserError("input id " + std::to_string(lo.item<int64_t>() < 0 ? lo.item<int64_t>() : hi.item<int64_t>()) +
                      " is outside the vocabulary of " + std::to_string(word_embeddings->weight.size(0)) +
                      " tokens; the data was made with a different vocab than model.vocab_size");
  }
  auto positions = position_ids.defined() ? position_ids.to(torch::kLong)
                                          : torch::arange(seq, input_ids.options().dtype(torch::kLong)).unsqueeze(0);
  auto types = token_type_ids.defined() ? token_type_ids : torch::zeros_like(input_ids);
  auto x = word_embeddings(input_ids) + token_type_embeddings(types) + position_embeddings(positions);
  return dropout(apply_layer_norm(LayerNorm, x));
}

// ---- attention ----------------------------------------------------------------------------------

BertSelfAttentionImpl::BertSelfAttentionImpl(const ModelConfig& cfg)
    : heads_(cfg.num_attention_heads),
      head_dim_(cfg.hidden_size / cfg.num_attention_heads),
      dropout_p_(cfg.attention_probs_dropout_prob),
      impl_(compat::resolve_attention_impl(cfg.attention_impl)) {
  query = register_module("query", nn::Linear(cfg.hidden_size, cfg.hidden_size));
  key = register_module("key", nn::Linear(cfg.hidden_size, cfg.hidden_size));
  value = register_module("value", nn::Linear(cfg.hidden_size, cfg.hidden_size));
}

torch::Tensor BertSelfAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& mask) {
  const int64_t b = hidden.size(0), s = hidden.size(1);
  auto split = [&](const torch::Tensor& t) { return t.view({b, s, heads_, head_dim_}).permute({0, 2, 1, 3}); };
  auto q = split(query(hidden)), k = split(key(hidden)), v = split(value(hidden));
  auto ctx = compat::scaled_dot_product_attention(q, k, v, mask, dropout_p_, is_training(), impl_);
  return ctx.permute({0, 2, 1, 3}).contiguous().view({b, s, heads_ * head_dim_});
}

BertSelfOutputImpl::BertSelfOutputImpl(const ModelConfig& cfg) {
  dense = register_module("dense", nn::Linear(cfg.hidden_size, cfg.hidden_size));
  LayerNorm = register_module("LayerNorm", make_layer_norm(cfg));
  dropout = register_module("dropout", nn::Dropout(cfg.hidden_dropout_prob));
}

torch::Tensor BertSelfOutputImpl::forward(const torch::Tensor& hidden, const torch::Tensor& residual) {
  return apply_layer_norm(LayerNorm, dropout(dense(hidden)) + residual);
}

BertAttentionImpl::BertAttentionImpl(const ModelConfig& cfg) {
  self = register_module("self", BertSelfAttention(cfg));
  output = register_module("output", BertSelfOutput(cfg));
}

torch::Tensor BertAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& mask) {
  return output(self(hidden, mask), hidden);
}

// ---- feed-forward -------------------------------------------------------------------------------

BertIntermediateImpl::BertIntermediateImpl(const ModelConfig& cfg) : act_(cfg.hidden_act) {
  check_activation(act_);
  dense = register_module("dense", nn::Linear(cfg.hidden_size, cfg.intermediate_size));
}

torch::Tensor BertIntermediateImpl::forward(const torch::Tensor& hidden) { return activation(act_, dense(hidden)); }

BertOutputImpl::BertOutputImpl(const ModelConfig& cfg) {
  dense = register_module("dense", nn::Linear(cfg.intermediate_size, cfg.hidden_size));
  LayerNorm = register_module("LayerNorm", make_layer_norm(cfg));
  dropout = register_module("dropout", nn::Dropout(cfg.hidden_dropout_prob));
}

torch::Tensor BertOutputImpl::forward(const torch::Tensor& intermediate, const torch::Tensor& residual) {
  return apply_layer_norm(LayerNorm, dropout(dense(intermediate)) + residual);
}

// ---- layers -------------------------------------------------------------------------------------

BertLayerImpl::BertLayerImpl(const ModelConfig& cfg) {
  attention = register_module("attention", BertAttention(cfg));
  intermediate = register_module("intermediate", BertIntermediate(cfg));
  output = register_module("output", BertOutput(cfg));
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& hidden, const torch::Tensor& mask) {
  auto attn = attention(hidden, mask);
  return output(intermediate(attn), attn);
}

BertEncoderImpl::BertEncoderImpl(const ModelConfig& cfg) : checkpointing_(cfg.gradient_checkpointing) {
  layer = register_module("layer", nn::ModuleList());
  for (int64_t i = 0; i < cfg.num_hidden_layers; ++i) layer->push_back(BertLayer(cfg));
}

namespace {

// One encoder layer as an autograd node that keeps only its inputs. Forward runs the layer without
// a graph (Function::apply already disables grad mode) after recording the generator state and
// autocast; backward restores both, runs the layer again with a graph and back-propagates through
// it, which accumulates the parameters' gradients and yields the gradient of the input.
struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  // The mask is passed by pointer: it needs no gradient, and may be undefined.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& hidden,
                               const torch::Tensor* mask, BertLayerImpl* layer) {
    const auto dev = hidden.device();
    ctx->saved_data["layer"] = reinterpret_cast<int64_t>(layer);
    {
      auto gen = at::globalContext().defaultGenerator(dev);
      std::lock_guard<std::mutex> lock(gen.mutex());
      ctx->saved_data["rng"] = gen.get_state();
    }
    ctx->saved_data["autocast"] = compat::autocast_enabled(dev.type());
    ctx->saved_data["autocast_dtype"] = static_cast<int64_t>(compat::autocast_dtype(dev.type()));
    ctx->save_for_backward({hidden});
    if (mask->defined()) ctx->saved_data["mask"] = *mask;
    return layer->forward(hidden, *mask);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    auto* layer = reinterpret_cast<BertLayerImpl*>(ctx->saved_data["layer"].toInt());
    auto input = saved[0].detach().requires_grad_(true);
    const auto dev = input.device();
    const auto type = dev.type();
    auto gen = at::globalContext().defaultGenerator(dev);
    torch::Tensor rng_now;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      rng_now = gen.get_state();
      gen.set_state(ctx->saved_data["rng"].toTensor());
    }
    const bool ac_now = compat::autocast_enabled(type);
    const auto ac_dtype_now = compat::autocast_dtype(type);
    compat::set_autocast(type, ctx->saved_data["autocast"].toBool(),
                         static_cast<c10::ScalarType>(ctx->saved_data["autocast_dtype"].toInt()));
    torch::Tensor out;
    {
      torch::AutoGradMode grad(true);
      const auto it = ctx->saved_data.find("mask");
      out = layer->forward(input, it == ctx->saved_data.end() ? torch::Tensor() : it->second.toTensor());
    }
    compat::set_autocast(type, ac_now, ac_dtype_now);
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(rng_now);
    }
    torch::autograd::backward({out}, {grad_out[0]});
    return {input.grad(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor BertEncoderImpl::forward(torch::Tensor hidden, const torch::Tensor& mask) {
  const bool checkpoint = checkpointing_ && is_training() && at::GradMode::is_enabled() && hidden.requires_grad();
  for (auto& l : *layer) {
    auto* impl = l->as<BertLayerImpl>();
    hidden = checkpoint ? CheckpointedLayer::apply(hidden, &mask, impl) : impl->forward(hidden, mask);
  }
  return hidden;
}

BertPoolerImpl::BertPoolerImpl(const ModelConfig& cfg) {
  dense = register_module("dense", nn::Linear(cfg.hidden_size, cfg.hidden_size));
}

torch::Tensor BertPoolerImpl::forward(const torch::Tensor& sequence_output) { return pool(sequence_output.select(1, 0)); }

torch::Tensor BertPoolerImpl::pool(const torch::Tensor& cls_hidden) { return torch::tanh(dense(cls_hidden)); }

// ---- the model ----------------------------------------------------------------------------------

BertModelImpl::BertModelImpl(const ModelConfig& cfg, bool add_pooling_layer) : cfg_(cfg) {
  validate_model_config(cfg);
  embeddings = register_module("embeddings", BertEmbeddings(cfg));
  encoder = register_module("encoder", BertEncoder(cfg));
  if (add_pooling_layer) pooler = register_module("pooler", BertPooler(cfg));
  init_bert_weights(*this, cfg);
}

BertModelOutput BertModelImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                       const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                       const torch::Tensor& sequence_index) {
  if (input_ids.dim() != 2) throw UserError("input_ids must be [batch, seq]");
  for (const auto* t : {&position_ids, &sequence_index})
    if (t->defined() && !t->sizes().equals(input_ids.sizes()))
      throw UserError("position_ids and sequence_index must have the shape of input_ids [batch, seq]");
  auto hidden = embeddings(input_ids, token_type_ids, position_ids);
  // In the embeddings' dtype (fp32 under autocast, as HF): the masked softmax then runs in fp32.
  // Built once per forward and shared by every layer.
  torch::Tensor mask;
  if (sequence_index.defined())
    mask = block_diagonal_attention_mask(sequence_index, hidden.scalar_type());
  else if (attention_mask.defined())
    mask = extended_attention_mask(attention_mask, hidden.scalar_type());
  BertModelOutput out;
  out.sequence_output = encoder(hidden, mask);
  if (pooler && !sequence_index.defined()) out.pooled_output = pooler(out.sequence_output);
  return out;
}

}  // namespace bert::model
