#include "attention_cudnn.hpp"

#include <cmath>
#include <string>
#include <unordered_map>

#include "check.hpp"

#if OVERLAPSIM_CUDNN_FRONTEND
#include <cudnn_frontend.h>
namespace fe = cudnn_frontend;
#endif

namespace ovv {

#if OVERLAPSIM_CUDNN_FRONTEND

namespace {
constexpr int64_t kQ = 1, kK = 2, kV = 3, kO = 4;

void fe_check(fe::error_t e, const char* what, const SdpaShape& s) {
  if (e.is_good()) return;
  throw GpuError(std::string("cuDNN SDPA ") + what + " (batch " + std::to_string(s.batch) + ", heads " + std::to_string(s.heads) + ", seq_q " +
                 std::to_string(s.seq_q) + ", seq_kv " + std::to_string(s.seq_kv) + ", head_dim " + std::to_string(s.head_dim) +
                 "): " + e.get_message());
}
}  // namespace

bool cudnn_sdpa_built() { return true; }

struct CudnnSdpa::Impl {
  cudnnHandle_t handle{};
  std::map<SdpaShape, std::shared_ptr<fe::graph::Graph>> graphs;
};

CudnnSdpa::CudnnSdpa() : impl_(std::make_unique<Impl>()) {
  const cudnnStatus_t st = cudnnCreate(&impl_->handle);
  if (st != CUDNN_STATUS_SUCCESS) throw GpuError(std::string("cudnnCreate: ") + cudnnGetErrorString(st));
}

CudnnSdpa::~CudnnSdpa() {
  if (impl_ && impl_->handle) cudnnDestroy(impl_->handle);
}

int64_t CudnnSdpa::prepare(const SdpaShape& s) {
  auto& g = impl_->graphs[s];
  if (!g) {
    g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(s.fp16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto bhsd = [&](const char* name, int64_t uid, int64_t seq) {
      return g->tensor(fe::graph::Tensor_attributes()
                           .set_name(name)
                           .set_uid(uid)
                           .set_dim({s.batch, s.heads, seq, s.head_dim})
                           .set_stride({s.heads * seq * s.head_dim, seq * s.head_dim, s.head_dim, 1}));
    };
    auto q = bhsd("Q", kQ, s.seq_q), k = bhsd("K", kK, s.seq_kv), v = bhsd("V", kV, s.seq_kv);
    // Inference: no softmax statistics, no mask or causal, scale 1/sqrt(d) (torch's default).
    auto options =
        fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(false).set_attn_scale(1.0f / std::sqrt(static_cast<float>(s.head_dim)));
    if (s.causal) options.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);
    auto [o, stats] = g->sdpa(q, k, v, options);
    (void)stats;
    o->set_output(true)
        .set_uid(kO)
        .set_dim({s.batch, s.heads, s.seq_q, s.head_dim})
        .set_stride({s.heads * s.seq_q * s.head_dim, s.seq_q * s.head_dim, s.head_dim, 1});
    fe_check(g->validate(), "graph", s);
    fe_check(g->build_operation_graph(impl_->handle), "operation graph", s);
    fe_check(g->create_execution_plans({fe::HeurMode_t::A}), "execution plans", s);
    fe_check(g->check_support(), "support on this GPU", s);
    fe_check(g->build_plans(impl_->handle), "plan", s);
  }
  int64_t workspace = 0;
  fe_check(g->get_workspace_size(workspace), "workspace", s);
  return workspace;
}

void CudnnSdpa::run(const SdpaShape& s, cudaStream_t stream, void* q, void* k, void* v, void* o, void* workspace) {
  const auto it = impl_->graphs.find(s);
  if (it == impl_->graphs.end()) throw GpuError("cuDNN SDPA: a shape was not prepared before the run");
  const cudnnStatus_t st = cudnnSetStream(impl_->handle, stream);
  if (st != CUDNN_STATUS_SUCCESS) throw GpuError(std::string("cudnnSetStream: ") + cudnnGetErrorString(st));
  std::unordered_map<int64_t, void*> pack{{kQ, q}, {kK, k}, {kV, v}, {kO, o}};
  fe_check(it->second->execute(impl_->handle, pack, workspace), "execute", s);
}

#else

bool cudnn_sdpa_built() { return false; }
struct CudnnSdpa::Impl {};
CudnnSdpa::CudnnSdpa() {
  throw GpuError("overlapsim-validate was built without cudnn-frontend: attention runs as GEMM stand-ins (docs/calibrate-your-node.md)");
}
CudnnSdpa::~CudnnSdpa() = default;
int64_t CudnnSdpa::prepare(const SdpaShape&) { return 0; }
void CudnnSdpa::run(const SdpaShape&, cudaStream_t, void*, void*, void*, void*, void*) {}

#endif

}  // namespace ovv
