#pragma once
// Every difference between the LibTorch versions we build against (Debian's 1.13 and 2.x)
// lives in this header, so the rest of the tree is written once.
#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/autocast_mode.h>

#include <cmath>
#include <string>

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

// softmax(q k^T / sqrt(d) + mask) v with dropout on the probabilities.
// q, k, v: [batch, heads, seq, head_dim]; additive_mask: broadcastable to [batch, heads, seq, seq]
// (0 = attend, large negative = ignore) or undefined. On 2.x this is the fused kernel; on 1.13 it
// is the explicit matmul/softmax path, computed the same way HF transformers' eager BERT does.
inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               const at::Tensor& additive_mask, double dropout_p, bool training) {
  const double p = training ? dropout_p : 0.0;
#if BERT_HAS_SDPA
  c10::optional<at::Tensor> mask;
  if (additive_mask.defined()) mask = additive_mask.to(q.scalar_type());
  return at::scaled_dot_product_attention(q, k, v, mask, p, /*is_causal=*/false);
#else
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (additive_mask.defined()) scores = scores + additive_mask;
  at::Tensor probs = at::softmax(scores, -1);
  if (p > 0) probs = at::dropout(probs, p, /*train=*/true);
  return at::matmul(probs.to(v.scalar_type()), v);
#endif
}

}  // namespace bert::compat
