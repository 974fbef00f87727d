// NCCL's model as the executor uses it where a calibration measured no NCCL
// (NcclParams::nccl_model): NCCL's view of the topology (nccl_topo.hpp) and
// its tuning model (nccl_tuning.hpp) give a collective's channel count and,
// by size, its latency and time, which the executor runs as it runs a
// measured table (Collectives::tabled). Its constants are NCCL's own: the
// channel search's per-channel bandwidth, the tuning model's base and
// per-hop latencies and protocol factors (LL below NCCL's thresholds, LL128
// over NVLink, Simple); the bytes of NCCL's choice move at the rate the
// NVLink links deliver (nccl_nvlink_rate: Volta's above NCCL's figure).
//
// With NCCL_NVLS_ENABLE (RuntimeSettings::nccl_nvls_enable) NVLS joins the
// choice; its time runs on NVLS's CTAs (NcclNvls::cuda_channels) as a
// ring's on its channels, and the executor lays its bytes on each GPU's
// NVSwitch port as NVLS moves them (Collectives::start_in_switch: the
// switch reduces and multicasts), so where other traffic on a port leaves
// it less than NVLS's rate needs, that port sets the pace.
//
// What it covers: the all-to-all (grouped send/recv), all-gather,
// reduce-scatter and all-reduce of a communicator inside one host. A
// communicator across hosts, the pairwise all-to-all and send/recv keep the
// channel model (NcclParams' channel fields).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "gpu/nccl_topo.hpp"
#include "gpu/nccl_tuning.hpp"
#include "gpu/params/nccl.hpp"

namespace osim::exec {

class NcclModel {
 public:
  /// Builds NCCL's view of `topo` lazily, at the first question.
  /// `nvls`: NCCL_NVLS_ENABLE=1 (NcclTuneOptions::nvls).
  explicit NcclModel(const hw::Topology& topo, bool nvls = false) : topo_(topo), nvls_(nvls) {}
  /// Refuses NVLS on a topology without it (nccl_nvls_check), `where` the setting's place.
  void check_nvls(const SourceLocation& where) const { nccl_nvls_check(view(false), topo_.name(), where); }
  /// The channels NCCL runs a collective inside one host on.
  [[nodiscard]] int channels() const { return view(false).host_coll_channels; }
  /// Whether the host's rings run over NVLink (P2P). Only there does the
  /// executor take the model: through host memory (SHM) NCCL's tuning model
  /// prices a step as a PCI hop, half what public runs show at small sizes
  /// (validate/nccl-public), so such collectives keep the channel model and
  /// the host's links.
  [[nodiscard]] bool nvlink() const { return view(false).host_ring.type_intra <= NcclPath::Nvb; }
  /// What one rank's collective traffic through host memory (NCCL's SHM
  /// transport) moves at most, in bytes/s: kNcclShmEfficiency of its GPU's
  /// PCIe link, every byte leaving as stores to host memory and entering
  /// the peer as loads (nccl_tuning.hpp). 0 where the topology gives no link.
  [[nodiscard]] double shm_rank_bandwidth() const { return kNcclShmEfficiency * view(true).gpu_pcie_GBps * 1e9; }

  struct Timing {
    double latency_s = 0;  // what does not grow with bytes
    double time_s = 0;     // the whole collective's
    NcclAlgo algo = NcclAlgo::Ring;
    NcclProto proto = NcclProto::Simple;
  };
  /// Collective `coll` of `ranks` ranks inside one host, `bytes` as
  /// nccl-tests gives them (NcclTuning::predict), through host memory where
  /// `via_host`, on `channels` (0: NCCL's; another count scales the part
  /// that grows with bytes by NCCL's count / it). Null for what it does not
  /// cover (the pairwise all-to-all; fewer than 2 ranks).
  [[nodiscard]] std::optional<Timing> timing(TableColl coll, int ranks, double bytes, bool via_host, int channels) const;

 private:
  const NcclView& view(bool p2p_disable) const;
  const hw::Topology& topo_;
  bool nvls_ = false;
  mutable std::unique_ptr<NcclView> views_[2];                                 // [NCCL_P2P_DISABLE]
  mutable std::map<std::pair<int, bool>, std::unique_ptr<NcclTuning>> tuned_;  // (ranks, via host)
};

}  // namespace osim::exec
