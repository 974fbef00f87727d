// Attention as cuDNN's fused flash SDPA (the cuDNN 9 graph API through
// cudnn-frontend): the kernel PyTorch's default scaled_dot_product_attention
// runs on Hopper. libcudnn is loaded when the first runner needs it, so the
// binary starts where cuDNN is absent (attention then fails, saying so).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include <cuda_runtime.h>

namespace ovv {

struct SdpaShape {
  int64_t batch = 1, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool fp16 = false;    // else bf16
  bool causal = false;  // query i sees keys 0..i (the diagonal at the top left, PyTorch's is_causal)
  auto key() const { return std::tie(batch, heads, seq_q, seq_kv, head_dim, fp16, causal); }
  bool operator<(const SdpaShape& o) const { return key() < o.key(); }
  // Q and O: batch x heads x seq_q x head_dim; K and V: batch x heads x seq_kv x head_dim (2 bytes each).
  size_t q_bytes() const { return static_cast<size_t>(batch * heads * seq_q * head_dim * 2); }
  size_t kv_bytes() const { return static_cast<size_t>(batch * heads * seq_kv * head_dim * 2); }
};

/// Whether this build has the cuDNN SDPA (cudnn-frontend was found at configure time).
bool cudnn_sdpa_built();

/// One device's SDPA graphs (one per shape, built before the runs) on its cuDNN handle.
class CudnnSdpa {
 public:
  /// On the current device; throws GpuError when libcudnn cannot be loaded.
  CudnnSdpa();
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;
  /// Builds the shape's graph (once); returns the workspace bytes it needs.
  int64_t prepare(const SdpaShape& s);
  /// Enqueues O = softmax(Q K^T / sqrt(d)) V on `stream` (no mask, or causal): q, k, v, o laid out
  /// [batch, heads, seq, head_dim]; `workspace` at least prepare()'s bytes.
  void run(const SdpaShape& s, cudaStream_t stream, void* q, void* k, void* v, void* o, void* workspace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ovv
