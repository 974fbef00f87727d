// NCCL collectives: a channel model (latency + bytes over channels x a
// channel's rate, under a rank's ceiling), or measured tables where they fit
// (docs/execution-model.md "Collectives"; bench nccl_*).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/units.hpp"

namespace osim {

// FrameworkAllToAllPairwise: the pairwise all-to-all as PyTorch calls it (a
// batch_isend_irecv round per partner), timed from before the call with the
// GPU otherwise idle (framework.py all_to_all_time, bench framework_all_to_all).
enum class TableColl : uint8_t { AllToAll, AllToAllPairwise, AllGather, ReduceScatter, AllReduce, FrameworkAllToAllPairwise };
/// The name a calibration file gives a collective's table; the runner's bench
/// key is "nccl_" + it (the framework's table comes from framework_all_to_all).
const char* table_coll_name(TableColl c);
inline constexpr TableColl kTableColls[] = {TableColl::AllToAll,      TableColl::AllToAllPairwise, TableColl::AllGather,
                                            TableColl::ReduceScatter, TableColl::AllReduce,        TableColl::FrameworkAllToAllPairwise};

// Measured collective times against bytes per rank, per collective, rank
// count, transport and channel count (0: NCCL's choice).
struct NcclTable {
  TableColl coll = TableColl::AllToAll;
  int ranks = 0;
  bool via_host = false;                          // through host memory (NCCL_P2P_DISABLE=1)
  std::vector<std::pair<double, double>> points;  // (bytes per rank, time in s), bytes ascending
  int channels = 0;
  /// The straight line through the two points around `bytes`; below the
  /// smallest its time, above the largest the last segment's line.
  [[nodiscard]] double time_at(double bytes) const;
};

struct NcclParams {
  int nccl_channels = 24;
  Bandwidth nccl_channel_bandwidth = Bandwidth::from_GBps(19.5);
  Time nccl_latency = Time::from_us(10);                        // per launch (and per pairwise round)
  Time nccl_step_latency = Time::from_us(1);                    // each further ring step
  Bandwidth nccl_rank_bandwidth = Bandwidth::unlimited();       // one rank's collective traffic (SM copies)
  Bandwidth nccl_host_rank_bandwidth = Bandwidth::unlimited();  // the same through host memory
  // 1: a collective no table fits takes NCCL's own model over the topology
  // (gpu/nccl_model.hpp: its channels, latency and time by size) in place of
  // the channel fields above; a calibration that measured no NCCL sets it.
  int nccl_model = 0;
  // Where a table fits a collective (same collective, transport and channel
  // count, inside one host; the nearest rank count) its flows take the
  // table's latency and rate in place of the channel model.
  std::vector<NcclTable> nccl_tables;
  /// The table for this collective: same kind, transport and channel count,
  /// the rank count nearest `ranks` (ties: the larger); null if none.
  [[nodiscard]] const NcclTable* nccl_table_for(TableColl coll, int ranks, bool via_host, int channels = 0) const;
};

}  // namespace osim
