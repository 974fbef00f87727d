#include "gpu/programs.hpp"

#include <algorithm>
#include <bit>
#include <cassert>

#include "gpu/exec_context.hpp"

namespace osim::exec {

KernelKey KernelKey::of(const Op& op) {
  KernelKey k;
  if (op.duration) k.duration_ps = op.duration->ps();
  if (op.gemm) k.gemm = *op.gemm;
  if (op.attention) k.attention = *op.attention;
  if (op.conv) k.conv = *op.conv;
  k.flops = op.flops;
  k.hbm_bytes = op.hbm_bytes;
  k.efficiency = op.efficiency;
  k.dtype = op.dtype;
  k.access = op.access;
  k.norm_row = op.norm_row;
  return k;
}

bool KernelKey::operator==(const KernelKey& o) const {
  const auto& a = attention;
  const auto& b = o.attention;
  return duration_ps == o.duration_ps && gemm.m == o.gemm.m && gemm.n == o.gemm.n && gemm.k == o.gemm.k && a.batch == b.batch && a.heads == b.heads &&
         a.seq_q == b.seq_q && a.seq_kv == b.seq_kv && a.head_dim == b.head_dim && a.backend == b.backend && a.causal == b.causal &&
         flops == o.flops && hbm_bytes == o.hbm_bytes && efficiency == o.efficiency && dtype == o.dtype && access == o.access &&
         norm_row == o.norm_row && conv == o.conv;
}

// Independent multiplies (one chain each), then one fold: this runs once per
// kernel of a program.
size_t KernelKeyHash::operator()(const KernelKey& k) const {
  auto pair = [](int32_t a, int32_t b) {
    return static_cast<uint64_t>(static_cast<uint32_t>(a)) | (static_cast<uint64_t>(static_cast<uint32_t>(b)) << 32);
  };
  auto bits = [](double x) { return std::bit_cast<uint64_t>(x + 0.0); };  // + 0.0: -0.0 hashes as 0.0, as == says
  const uint64_t h = static_cast<uint64_t>(k.duration_ps) * 0x9E3779B97F4A7C15ull + pair(k.gemm.m, k.gemm.n) * 0xC2B2AE3D27D4EB4Full +
                     pair(k.gemm.k, k.attention.batch) * 0x165667B19E3779F9ull + pair(k.attention.heads, k.attention.seq_q) * 0xD6E8FEB86659FD93ull +
                     pair(k.attention.seq_kv, k.attention.head_dim) * 0xFF51AFD7ED558CCDull + bits(k.flops) * 0xC4CEB9FE1A85EC53ull +
                     bits(k.hbm_bytes) * 0x2545F4914F6CDD1Dull +
                     pair(static_cast<int32_t>(std::bit_cast<uint32_t>(k.efficiency + 0.0f)), static_cast<int32_t>(k.dtype)) * 0x94D049BB133111EBull +
                     static_cast<uint64_t>(k.attention.backend) + (k.attention.causal ? 0x100u : 0u) +
                     pair(k.norm_row, static_cast<int32_t>(k.access)) * 0xBF58476D1CE4E5B9ull +
                     pair(k.conv.positions, k.conv.cout) * 0x8CB92BA72F3D8DD7ull + pair(k.conv.cin, k.conv.taps) * 0x9FB21C651E98DF25ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

// Op i joins: its queue entry as the host will issue it, its kernel time.
void ProgramInfo::append(const Op& op, int64_t i) {
  const auto index = static_cast<int32_t>(i);
  q.coll_ord.push_back(op.kind == OpKind::Collective ? q.colls++ : -1);
  p2p = p2p || (op.kind == OpKind::Memcpy && op.copy == CopyKind::P2P);
  double work = 0;
  if (op.kind == OpKind::Kernel) {
    const KernelKey key = KernelKey::of(op);
    if (auto hit = timed_.find(key); hit != timed_.end()) {
      work = hit->second;
    } else {
      const bool framework = s_->runtime.framework_kernels;
      try {
        work = kernel_time(op, *gpu_, *p_, {}, framework).s();
      } catch (const InputError&) {  // fail early on missing rates, naming the op
        (void)kernel_time(op, *gpu_, *p_, s_->location(ranks.front(), index), framework);
        throw;
      }
      timed_.emplace(key, work);
    }
    // A measured kernel: its time beside the copies it had then taken out (the replay puts its own back).
    if (op.duration && op.beside_copies_ns != decltype(op.beside_copies_ns){}) work = measured_solo_s(op, work, *p_);
  }
  work_.push_back(work);
  if (!exec::is_gpu_op(op)) return;
  Window<int32_t>& mine = q.stream_ops[static_cast<size_t>(op.stream)];
  QueueEntry e{index, static_cast<int16_t>(op.stream), -1, static_cast<int32_t>(mine.end()), -1};
  if (op.kind == OpKind::StreamWaitEvent) {
    const auto [es, ep] = event_pos_[static_cast<size_t>(op.event)];
    e.dep_stream = static_cast<int16_t>(es);
    e.dep_pos = ep;
  } else if (op.kind == OpKind::StreamWaitStream) {
    if (const auto n = static_cast<int32_t>(q.stream_ops[static_cast<size_t>(op.stream2)].end()); n > 0) {
      e.dep_stream = static_cast<int16_t>(op.stream2);
      e.dep_pos = n - 1;
    }
  }
  if (op.kind == OpKind::EventRecord) event_pos_[static_cast<size_t>(op.event)] = {op.stream, e.pos};
  mine.push_back(index);
  const size_t hw = static_cast<size_t>(op.stream) % q.queues.size();
  if (q.queues[hw].empty()) q.used.insert(std::lower_bound(q.used.begin(), q.used.end(), hw), hw);
  q.queues[hw].push_back(e);
}

bool ProgramInfo::generate() {
  if (!source_) return false;
  part_.clear();
  if (!source_->next(part_)) return false;
  for (Op& op : part_) {
    const int64_t i = end();
    assert(!(op.kind == OpKind::Memcpy && op.copy == CopyKind::P2P) && "a program generated as it runs copies between GPUs through collectives");
    window_.push_back(std::move(op));
    append(window_[i], i);
  }
  return true;
}

void ProgramInfo::drop_before(int64_t op, const std::vector<int64_t>& queue_entry, const std::vector<int64_t>& stream_pos) {
  window_.drop_before(op);
  work_.drop_before(op);
  q.coll_ord.drop_before(op);
  for (size_t i = 0; i < q.queues.size(); ++i) q.queues[i].drop_before(queue_entry[i]);
  for (size_t i = 0; i < q.stream_ops.size(); ++i) q.stream_ops[i].drop_before(stream_pos[i]);
}

ProgramInfo& Programs::of(const Schedule& s, int r, const hw::NodeSpec& gpu, const ModelParams& p) {
  const Program& prog = s.programs[static_cast<size_t>(r)];
  const auto& ops = *prog.ops;
  auto [pit, fresh] = programs_.try_emplace(std::make_pair(&ops, compute_twin(&gpu)));
  ProgramInfo& info = pit->second;
  info.ranks.push_back(r);
  if (!fresh) return info;
  info.s_ = &s;
  info.gpu_ = &gpu;
  info.p_ = &p;
  info.q.queues.resize(static_cast<size_t>(s.runtime.device_max_connections));
  info.q.stream_ops.resize(s.streams.size());
  info.event_pos_.assign(s.events.size(), {-1, -1});
  if (prog.source) {
    info.source_ = prog.source();
    return info;
  }
  info.whole_ = ops.data();
  for (size_t i = 0; i < ops.size(); ++i) info.append(ops[i], static_cast<int64_t>(i));
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
