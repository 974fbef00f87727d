#include "schedule/spans.hpp"

#include <algorithm>
#include <cstdlib>

namespace osim {

namespace {

// Adds [a, b) to spans whose union is what counts: an empty span changes no
// union; one that overlaps or touches the last span joins it (one stream's
// spans come in order, so most do).
void put(Spans& v, int64_t a, int64_t b) {
  if (b <= a) return;
  if (!v.empty() && a <= v.back().second && b >= v.back().first) {
    v.back().first = std::min(v.back().first, a);
    v.back().second = std::max(v.back().second, b);
    return;
  }
  v.emplace_back(a, b);
}

}  // namespace

void RunSpans::add(int rank, const Op& op, Time start, Time end) {
  RankSpans& R = ranks_[static_cast<size_t>(rank)];
  const int64_t a = start.ps(), b = end.ps();
  switch (op.kind) {
    case OpKind::Kernel: put(R.kernels, a, b); break;
    case OpKind::Collective:
      put(R.colls, a, b);
      bytes_collective += static_cast<double>(op.bytes);
      break;
    case OpKind::Memcpy: {
      put(R.copies, a, b);
      if (op.stream == compute_stream_) put(R.compute_copies, a, b);
      const double bytes = static_cast<double>(op.bytes);
      (op.copy == CopyKind::H2D ? bytes_h2d : op.copy == CopyKind::D2H ? bytes_d2h : op.copy == CopyKind::P2P ? bytes_p2p : bytes_d2d) += bytes;
      const Time d = end - start;
      const double gbps = d.s() > 0 ? bytes / d.s() * 1e-9 : 1e300;
      for (size_t i = 0; i < kBins.size(); ++i)
        if (gbps >= kBins[i][0] && gbps < kBins[i][1]) {
          ++bins_[i].count;
          bins_[i].bytes += bytes;
          bins_[i].time += d;
        }
      break;
    }
    default: break;
  }
  if (op.stream == compute_stream_ && (op.kind == OpKind::Kernel || op.kind == OpKind::Collective || op.kind == OpKind::Memcpy))
    put(R.cstream, a, b);
  if (rank == 0 && op.kind == OpKind::Marker && op.stream == compute_stream_ && op.label.rfind("step ", 0) == 0) {
    const int idx = std::atoi(op.label.c_str() + 5);
    if (steps_.empty() || steps_.back().first != idx) steps_.emplace_back(idx, start);
  }
  if (rank == 0 && op.kind == OpKind::Marker && op.stream == compute_stream_ && op.label == kStepsEndMarker) steps_end_ = start;
}

}  // namespace osim
