#pragma once
// Every difference between the LibTorch versions we build against (Debian's 1.13 and 2.x)
// lives in this header, so the rest of the tree is written once.
#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/autocast_mode.h>

#include <cmath>
#include <string>

#include "bert/common/error.h"

#define BERT_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace bert::compat {

inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// ---- autocast -------------------------------------------------------------------------------
// 1.13: at::autocast::set_cpu_enabled / set_autocast_cpu_dtype / set_enabled / set_autocast_gpu_dtype
// 2.4+: at::autocast::set_autocast_enabled(device_type, bool) / set_autocast_dtype(device_type, dtype)
inline void set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype) {
#if BERT_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
  if (enabled) at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CPU) {
    at::autocast::set_cpu_enabled(enabled);
    if (enabled) at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_enabled(enabled);
    if (enabled) at::autocast::set_autocast_gpu_dtype(dtype);
  }
#endif
  if (!enabled) at::autocast::clear_cache();
}

inline bool autocast_enabled(c10::DeviceType device) {
#if BERT_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

// ---- fused attention --------------------------------------------------------------------------
// scaled_dot_product_attention exists from 2.0; 1.13 uses the explicit softmax path.
#define BERT_HAS_SDPA BERT_TORCH_AT_LEAST(2, 0)
constexpr bool kHasSDPA = BERT_HAS_SDPA;

enum class AttentionImpl { kExplicit, kSdpa };

// model.attention_impl -> the path to run: "auto" is the fused op where this LibTorch has it;
// "sdpa" on a LibTorch without it is a UserError naming the version.
inline AttentionImpl resolve_attention_impl(const std::string& name) {
  if (name == "explicit") return AttentionImpl::kExplicit;
  if (name == "sdpa") {
    if (!kHasSDPA)
      throw UserError("model.attention_impl=sdpa needs LibTorch >= 2.0 (scaled_dot_product_attention), this build "
                      "uses LibTorch " + torch_version() + "; use auto or explicit");
    return AttentionImpl::kSdpa;
  }
  if (name == "auto" || name.empty()) return kHasSDPA ? AttentionImpl::kSdpa : AttentionImpl::kExplicit;
  throw UserError("unknown model.attention_impl '" + name + "'; use auto, sdpa or explicit");
}

// softmax(q k^T / sqrt(d) + mask) v with dropout on the probabilities, computed the way HF
// transformers' eager BERT does. q, k, v: [batch, heads, seq, head_dim]; additive_mask:
// broadcastable to [batch, heads, seq, seq] (0 = attend, large negative = ignore: the padding mask
// [batch,1,1,seq] or the packed block-diagonal mask [batch,1,seq,seq]) or undefined.
inline at::Tensor explicit_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const at::Tensor& additive_mask, double dropout_p) {
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (additive_mask.defined()) scores = scores + additive_mask;
  at::Tensor probs = at::softmax(scores, -1);
  if (dropout_p > 0) probs = at::dropout(probs, dropout_p, /*train=*/true);
  return at::matmul(probs.to(v.scalar_type()), v);
}

// The same through the fused kernel (flash / memory-efficient / math, chosen by LibTorch).
#if BERT_HAS_SDPA
inline at::Tensor sdpa_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 const at::Tensor& additive_mask, double dropout_p) {
  c10::optional<at::Tensor> mask;
  if (additive_mask.defined()) mask = additive_mask.to(q.scalar_type());
  return at::scaled_dot_product_attention(q, k, v, mask, dropout_p, /*is_causal=*/false);
}
#endif

inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               const at::Tensor& additive_mask, double dropout_p, bool training,
                                               AttentionImpl impl = kHasSDPA ? AttentionImpl::kSdpa
                                                                             : AttentionImpl::kExplicit) {
  const double p = training ? dropout_p : 0.0;
#if BERT_HAS_SDPA
  if (impl == AttentionImpl::kSdpa) return sdpa_attention(q, k, v, additive_mask, p);
#endif
  return explicit_attention(q, k, v, additive_mask, p);
}

// ---- autocast state (activation checkpointing re-enters it in backward) -----------------------
inline c10::ScalarType autocast_dtype(c10::DeviceType device) {
#if BERT_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                        : at::autocast::get_autocast_gpu_dtype();
#endif
}

}  // namespace bert::compat
