#include "gpu/programs.hpp"

#include <bit>
#include <unordered_map>

#include "gpu/exec_context.hpp"

namespace osim::exec {

namespace {

// Everything kernel_time() reads from an op.
struct KernelKey {
  int64_t duration_ps = -1;
  GemmShape gemm{-1, -1, -1};
  AttentionShape attention{-1, -1, -1, -1, -1};
  double flops = 0, hbm_bytes = 0;
  float efficiency = 0;
  DType dtype = DType::BF16;
  Access access = Access::Elementwise;
  static KernelKey of(const Op& op) {
    KernelKey k;
    if (op.duration) k.duration_ps = op.duration->ps();
    if (op.gemm) k.gemm = *op.gemm;
    if (op.attention) k.attention = *op.attention;
    k.flops = op.flops;
    k.hbm_bytes = op.hbm_bytes;
    k.efficiency = op.efficiency;
    k.dtype = op.dtype;
    k.access = op.access;
    return k;
  }
  bool operator==(const KernelKey& o) const {
    const auto& a = attention;
    const auto& b = o.attention;
    return duration_ps == o.duration_ps && gemm.m == o.gemm.m && gemm.n == o.gemm.n && gemm.k == o.gemm.k && a.batch == b.batch &&
           a.heads == b.heads && a.seq_q == b.seq_q && a.seq_kv == b.seq_kv && a.head_dim == b.head_dim && a.backend == b.backend && flops == o.flops &&
           hbm_bytes == o.hbm_bytes && efficiency == o.efficiency && dtype == o.dtype && access == o.access;
  }
};
struct KernelKeyHash {
  // Independent multiplies (one chain each), then one fold: this runs once
  // per kernel of a program.
  size_t operator()(const KernelKey& k) const {
    auto pair = [](int32_t a, int32_t b) { return static_cast<uint64_t>(static_cast<uint32_t>(a)) | (static_cast<uint64_t>(static_cast<uint32_t>(b)) << 32); };
    auto bits = [](double x) { return std::bit_cast<uint64_t>(x + 0.0); };  // + 0.0: -0.0 hashes as 0.0, as == says
    const uint64_t h = static_cast<uint64_t>(k.duration_ps) * 0x9E3779B97F4A7C15ull + pair(k.gemm.m, k.gemm.n) * 0xC2B2AE3D27D4EB4Full +
                       pair(k.gemm.k, k.attention.batch) * 0x165667B19E3779F9ull +
                       pair(k.attention.heads, k.attention.seq_q) * 0xD6E8FEB86659FD93ull +
                       pair(k.attention.seq_kv, k.attention.head_dim) * 0xFF51AFD7ED558CCDull + bits(k.flops) * 0xC4CEB9FE1A85EC53ull +
                       bits(k.hbm_bytes) * 0x2545F4914F6CDD1Dull +
                       pair(static_cast<int32_t>(std::bit_cast<uint32_t>(k.efficiency + 0.0f)), static_cast<int32_t>(k.dtype)) * 0x94D049BB133111EBull +
                       static_cast<uint64_t>(k.attention.backend);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// The queues' entries as the host will issue them.
void build_queues(const Schedule& s, const std::vector<Op>& ops, ProgramQueues& q) {
  const size_t nq = static_cast<size_t>(s.runtime.device_max_connections);
  q.queues.assign(nq, {});
  q.stream_ops.assign(s.streams.size(), {});
  q.coll_ord.assign(ops.size(), -1);
  std::vector<std::pair<int, int>> event_pos(s.events.size(), {-1, -1});
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::Collective) q.coll_ord[i] = q.colls++;
    if (!is_gpu_op(op)) continue;
    auto& mine = q.stream_ops[static_cast<size_t>(op.stream)];
    QueueEntry e{static_cast<int32_t>(i), static_cast<int16_t>(op.stream), -1, static_cast<int32_t>(mine.size()), -1};
    if (op.kind == OpKind::StreamWaitEvent) {
      const auto [es, ep] = event_pos[static_cast<size_t>(op.event)];
      e.dep_stream = static_cast<int16_t>(es);
      e.dep_pos = ep;
    } else if (op.kind == OpKind::StreamWaitStream) {
      if (const int n = static_cast<int>(q.stream_ops[static_cast<size_t>(op.stream2)].size()); n > 0) {
        e.dep_stream = static_cast<int16_t>(op.stream2);
        e.dep_pos = n - 1;
      }
    }
    if (op.kind == OpKind::EventRecord) event_pos[static_cast<size_t>(op.event)] = {op.stream, e.pos};
    mine.push_back(static_cast<int32_t>(i));
    q.queues[static_cast<size_t>(op.stream) % nq].push_back(e);
  }
  for (size_t i = 0; i < nq; ++i)
    if (!q.queues[i].empty()) q.used.push_back(i);
}

}  // namespace

const ProgramInfo& Programs::of(const Schedule& s, int r, const hw::NodeSpec& gpu, const ModelParams& p) {
  const auto& ops = *s.programs[static_cast<size_t>(r)].ops;
  auto [pit, fresh] = programs_.try_emplace(std::make_pair(&ops, compute_twin(&gpu)));
  ProgramInfo& info = pit->second;
  if (!fresh) return info;
  info.work.assign(ops.size(), 0.0);
  build_queues(s, ops, info.q);
  // A program repeats a few kernel shapes thousands of times: each is timed once.
  std::unordered_map<KernelKey, double, KernelKeyHash> timed;
  const bool framework = s.runtime.framework == Framework::PyTorch;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    info.p2p = info.p2p || (op.kind == OpKind::Memcpy && op.copy == CopyKind::P2P);
    if (op.kind != OpKind::Kernel) continue;
    const KernelKey key = KernelKey::of(op);
    if (auto hit = timed.find(key); hit != timed.end()) {
      info.work[i] = hit->second;
      continue;
    }
    try {
      info.work[i] = kernel_time(op, gpu, p, {}, framework).s();
    } catch (const InputError&) {  // fail early on missing rates, naming the op
      (void)kernel_time(op, gpu, p, s.location(r, static_cast<int>(i)), framework);
      throw;
    }
    timed.emplace(key, info.work[i]);
  }
  return info;
}

const hw::NodeSpec* Programs::compute_twin(const hw::NodeSpec* n) {
  for (const hw::NodeSpec* k : compute_kinds_) {
    const auto &a = k->gpu.hbm_bandwidth, &b = n->gpu.hbm_bandwidth;
    if (k->gpu.peak_tflops == n->gpu.peak_tflops && a.has_value() == b.has_value() && (!a || a->bytes_per_s == b->bytes_per_s)) return k;
  }
  compute_kinds_.push_back(n);
  return n;
}

}  // namespace osim::exec
