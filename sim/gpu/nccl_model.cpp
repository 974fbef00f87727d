// NCCL's model in the executor (nccl_model.hpp).
#include "gpu/nccl_model.hpp"

namespace osim::exec {

const NcclView& NcclModel::view(bool p2p_disable) const {
  auto& v = views_[p2p_disable ? 1 : 0];
  if (!v) {
    NcclTopoOptions o;
    o.p2p_disable = p2p_disable;
    v = std::make_unique<NcclView>(nccl_view(topo_, o));
  }
  return *v;
}

std::optional<NcclModel::Timing> NcclModel::timing(TableColl coll, int ranks, double bytes, bool via_host, int channels) const {
  NcclColl c;
  switch (coll) {
    case TableColl::AllToAll: c = NcclColl::AllToAll; break;
    case TableColl::AllGather: c = NcclColl::AllGather; break;
    case TableColl::ReduceScatter: c = NcclColl::ReduceScatter; break;
    case TableColl::AllReduce: c = NcclColl::AllReduce; break;
    default: return std::nullopt;
  }
  if (ranks < 2) return std::nullopt;
  auto& t = tuned_[{ranks, via_host}];
  if (!t) {
    NcclTuneOptions o;
    o.ranks = ranks, o.nodes = 1;
    o.nvls = nvls_;
    t = std::make_unique<NcclTuning>(view(via_host), o);
  }
  const auto p = t->predict(c, bytes);
  if (!p) return std::nullopt;
  Timing r{p->latency_us * 1e-6, p->time_us * 1e-6, p->algo, p->proto};
  const bool nvls = p->algo == NcclAlgo::Nvls || p->algo == NcclAlgo::NvlsTree;
  const int own = nvls ? view(via_host).nvls_host.cuda_channels : view(via_host).host_coll_channels;
  // Other channels than NCCL's own: the transfer scales, the latency and
  // the pipeline's fill (one slice at a channel's rate) do not.
  const double fill_s = p->fill_us * 1e-6;
  if (channels > 0 && own > 0 && channels != own) r.time_s = r.latency_s + fill_s + (r.time_s - r.latency_s - fill_s) * own / channels;
  return r;
}

}  // namespace osim::exec
