// VRAM beyond a job's own tensors (validate/src/testcases/vram.py, run by
// PyTorch): the memory a process holds outside its caching allocator
// (vram_context), cuBLAS's workspace per stream (vram_gemm_workspace) and
// the allocator's reserve over the activations of a forward
// (vram_allocator_reserve), each a direct reading, the median where there
// are several; NCCL's buffers per communicator and per peer by transport
// (vram_nccl). Nothing to replay on the simulator.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "core/stats.hpp"

namespace osim {
namespace families::vram {

std::vector<double> values(const BenchDocs& docs, const char* key, const char* field) {
  std::vector<double> v;
  for (const auto& [name, doc] : docs)
    for (const auto& r : rows(doc, key)) v.push_back(r.at(field).get<double>());
  return v;
}

// NCCL's own memory per rank after its first all_to_all_single (vram_nccl):
// per transport, bytes = per communicator + per peer x (ranks - 1), ordinary
// least squares over the rank counts measured (the median where one is
// measured twice); one rank count alone gives the per-communicator part
// only. A second communicator (the ranks in pairs, one peer) splits that part:
// what it added is a communicator's own (less a peer's, peer to peer), the
// rest of the first's is the process's (nccl_process); without it the
// process's part stands and the communicator's is the rest. Peer to peer
// sets nccl_communicator and nccl_peer; through host memory nccl_via_host
// (its per-peer part is reported: it was 0 measured). Fresh communicators
// that run one kind of call each (vram.py's send_recv, all_reduce,
// all_gather rows, in that order): what an all-reduce's or all-gather's
// added, less a communicator's own, is nccl_collective (peer to peer; the
// median over them); a ring exchange's is reported (the model counts it as
// a communicator and its neighbours as peers).
void fit_nccl_buffers(FitContext& ctx) {
  VramParams& v = ctx.p.vram;
  Fit f{"NCCL's buffers (vram_nccl)",
        "device memory per rank after the first all_to_all_single = per communicator + per peer x (ranks - 1), per "
        "transport, least squares over the rank counts; a collective's communicator: what a fresh one added",
        {},
        0,
        0};
  bool process_fitted = false;
  for (const bool host : {false, true}) {
    // This transport's readings by rank count: after the first all-to-all, after the pairwise
    // exchange that follows, after a second communicator's first all-to-all.
    std::map<int, std::vector<double>> by_ranks, before, second;
    std::map<std::string, std::map<int, std::vector<double>>> fresh;  // after a fresh communicator's one kind of call, by rank count
    for (const auto& [name, doc] : ctx.docs)
      for (const auto& r : rows(doc, "vram_nccl")) {
        if ((r.at("transport").get<std::string>() == "host") != host) continue;
        const std::string after = r.at("after").get<std::string>();
        const int ranks = r.at("ranks").get<int>();
        const double bytes = r.at("bytes").get<double>();
        if (after == "all_to_all_single")
          by_ranks[ranks].push_back(bytes);
        else if (after == "pairwise")
          before[ranks].push_back(bytes);
        else if (after == "second_communicator")
          second[ranks].push_back(bytes);
        else
          fresh[after][ranks].push_back(bytes);
      }
    if (by_ranks.empty()) continue;
    std::vector<std::pair<double, double>> pts;  // (peers, bytes)
    for (const auto& [ranks, b] : by_ranks) pts.emplace_back(ranks - 1, median(b));
    double base = pts.front().second, per_peer = 0;
    if (pts.size() > 1) {
      const double n = static_cast<double>(pts.size());
      double mean_x = 0, mean_y = 0;
      for (const auto& [x, y] : pts) {
        mean_x += x / n;
        mean_y += y / n;
      }
      double sxy = 0, sxx = 0;
      for (const auto& [x, y] : pts) {
        sxy += (x - mean_x) * (y - mean_y);
        sxx += (x - mean_x) * (x - mean_x);
      }
      per_peer = std::max(0.0, sxy / sxx);
      base = std::max(0.0, mean_y - per_peer * mean_x);
    }
    const std::string way = host ? "host_" : "p2p_";
    f.values.emplace_back(fmt::format("{}per_communicator_MiB", way), base / (1 << 20));
    f.values.emplace_back(fmt::format("{}per_peer_MiB", way), per_peer / (1 << 20));
    f.points += static_cast<int>(pts.size());
    // What a second communicator added, per rank count: after it less after the pairwise exchange before it.
    std::vector<double> added;
    for (const auto& [ranks, b] : second)
      if (before.count(ranks)) added.push_back(median(b) - median(before[ranks]));
    // The first communicator with no peer (one rank count: its peers at the per-peer part standing).
    const double peer = host ? 0.0 : pts.size() > 1 ? per_peer : static_cast<double>(v.nccl_peer);
    const double first = pts.size() > 1 ? base : std::max(0.0, base - peer * pts.front().first);
    if (!added.empty()) {
      const double own = std::max(0.0, median(added) - peer);
      const auto process = static_cast<Bytes>(std::llround(std::max(0.0, first - own)));
      f.values.emplace_back(fmt::format("{}process_MiB", way), static_cast<double>(process) / (1 << 20));
      if (!process_fitted) v.nccl_process = process;  // peer to peer's, where both were measured
      process_fitted = true;
    }
    const double own = std::max(0.0, first - static_cast<double>(v.nccl_process));
    if (host) {
      v.nccl_via_host = static_cast<Bytes>(std::llround(own));
    } else {
      v.nccl_communicator = static_cast<Bytes>(std::llround(own));
      if (pts.size() > 1) v.nccl_peer = static_cast<Bytes>(std::llround(per_peer));
    }
    // What each fresh communicator added: after it less after the one before it.
    std::vector<double> ring_exchange, collectives;
    for (const auto& [ranks, b] : second) {
      double last = median(b);
      for (const char* kind : {"send_recv", "all_reduce", "all_gather"}) {
        const auto it = fresh[kind].find(ranks);
        if (it == fresh[kind].end()) break;
        const double now = median(it->second);
        (std::string(kind) == "send_recv" ? ring_exchange : collectives).push_back(now - last);
        last = now;
      }
    }
    if (!ring_exchange.empty()) f.values.emplace_back(fmt::format("{}ring_exchange_MiB", way), median(ring_exchange) / (1 << 20));
    if (!collectives.empty()) {
      f.values.emplace_back(fmt::format("{}collectives_MiB", way), median(collectives) / (1 << 20));
      f.points += static_cast<int>(collectives.size());
      if (!host) v.nccl_collective = static_cast<Bytes>(std::llround(std::max(0.0, median(collectives) - static_cast<double>(v.nccl_communicator))));
    }
  }
  if (f.points > 0) ctx.cal.fits.push_back(f);
}

void fit_vram(FitContext& ctx) {
  VramParams& v = ctx.p.vram;
  Fit f{"VRAM beyond the tensors",
        "direct readings through PyTorch (median where several): memory outside its allocator, cuBLAS's workspace per "
        "stream, the allocator's reserve over a forward's activations",
        {},
        0,
        0};
  if (const auto c = values(ctx.docs, "vram_context", "bytes"); !c.empty()) {
    v.cuda_context = static_cast<Bytes>(median(c));
    f.values.emplace_back("cuda_context_MiB", static_cast<double>(v.cuda_context) / (1 << 20));
    f.points += static_cast<int>(c.size());
  }
  if (const auto w = values(ctx.docs, "vram_gemm_workspace", "bytes"); !w.empty()) {
    v.gemm_workspace = static_cast<Bytes>(median(w));
    f.values.emplace_back("gemm_workspace_MiB", static_cast<double>(v.gemm_workspace) / (1 << 20));
    f.points += static_cast<int>(w.size());
  }
  if (const auto r = values(ctx.docs, "vram_allocator_reserve", "fraction"); !r.empty()) {
    v.allocator_reserve = std::max(0.0, std::round(median(r) * 1e4) / 1e4);  // as written: well within the shapes' spread
    f.values.emplace_back("allocator_reserve", v.allocator_reserve);
    f.points += static_cast<int>(r.size());
  }
  if (f.points > 0) ctx.cal.fits.push_back(f);
  fit_nccl_buffers(ctx);
}

}  // namespace families::vram
}  // namespace osim
