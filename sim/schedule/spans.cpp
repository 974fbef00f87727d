#include "schedule/spans.hpp"

#include <algorithm>
#include <cassert>
#include <cstdlib>

#include "core/intervals.hpp"

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

// A rank's measures over merged spans, the compute stream's gaps counted
// from `cstream_end` (its last busy end before these spans) where it has one.
RankBusy RunSpans::measure(const Spans* lists, std::optional<int64_t> cstream_end, Scratch& scratch) {
  const Spans &kernels = lists[0], &colls = lists[1], &copies = lists[2], &cstream = lists[3], &compute_copies = lists[4];
  RankBusy b;
  b.kernels = length(kernels);
  b.colls = length(colls);
  b.colls_exposed = length_minus(colls, kernels);
  b.copies = length(copies);
  Spans& both = scratch.both;
  both.assign(colls.begin(), colls.end());
  both.insert(both.end(), copies.begin(), copies.end());
  merge_in_place(both);
  b.colls_or_copies = length(both);
  Spans& gaps = scratch.gaps;
  gaps.clear();
  for (const auto& [a, e] : cstream) {
    if (cstream_end && a > *cstream_end) gaps.emplace_back(*cstream_end, a);
    cstream_end = e;
  }
  b.gaps = length(gaps);
  b.copies_in_gaps = length_both(gaps, copies);
  b.compute_copies = length(compute_copies);
  return b;
}

namespace {

// Moves the merged spans before t (clipped) from v to `before`; v keeps the rest.
void split(Spans& v, int64_t t, Spans& before) {
  size_t k = 0;
  while (k < v.size() && v[k].second <= t) ++k;
  before.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
  if (k < v.size() && v[k].first < t) {
    before.emplace_back(v[k].first, t);
    v[k].first = t;
  }
  v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
}

size_t held(const RankSpans& R) { return R.kernels.size() + R.colls.size() + R.copies.size() + R.cstream.size() + R.compute_copies.size(); }

}  // namespace

RankBusy& RankBusy::operator+=(const RankBusy& o) {
  kernels += o.kernels;
  colls += o.colls;
  colls_exposed += o.colls_exposed;
  copies += o.copies;
  colls_or_copies += o.colls_or_copies;
  gaps += o.gaps;
  copies_in_gaps += o.copies_in_gaps;
  compute_copies += o.compute_copies;
  return *this;
}

bool RunSpans::wants_fold(int rank) const {
  const RankSpans& R = ranks_[static_cast<size_t>(rank)];
  return held(R) >= std::max(R.fold_at, fold_at_);
}

void RunSpans::fold(int rank, int64_t watermark) {
  RankSpans& R = ranks_[static_cast<size_t>(rank)];
  Spans* lists[] = {&R.kernels, &R.colls, &R.copies, &R.cstream, &R.compute_copies};
  for (Spans* v : lists) merge_in_place(*v);
  // Fold at the watermark where the compute stream is busy there or has not
  // been busy yet; inside one of its gaps, at the gap's start (the gap's
  // length is known once it ends).
  int64_t at = watermark;
  const Spans& cs = R.cstream;
  const auto next = std::lower_bound(cs.begin(), cs.end(), std::make_pair(watermark, INT64_MIN));  // the first starting at it or later
  if (next != cs.begin())
    at = std::min(watermark, std::prev(next)->second);  // in the busy span before, or at its end
  else if (R.cstream_end)
    at = *R.cstream_end;
  if (at > R.folded_to) {
    for (size_t i = 0; i < 5; ++i) split(*lists[i], at, scratch_.before[i]);
    R.folded += measure(scratch_.before, R.cstream_end, scratch_);
    if (!scratch_.before[3].empty()) R.cstream_end = scratch_.before[3].back().second;
    R.folded_to = at;
  }
  // Spans that could not be folded (an op running long) wait for twice as many.
  R.fold_at = 2 * held(R);
}

RankBusy RunSpans::busy(int rank) const {
  const RankSpans& R = ranks_[static_cast<size_t>(rank)];
  Scratch scratch;
  const Spans* lists[] = {&R.kernels, &R.colls, &R.copies, &R.cstream, &R.compute_copies};
  for (size_t i = 0; i < 5; ++i) {
    scratch.before[i] = *lists[i];
    merge_in_place(scratch.before[i]);
  }
  RankBusy b = measure(scratch.before, R.cstream_end, scratch);
  b += R.folded;
  return b;
}

void RunSpans::add(int rank, const Op& op, Time start, Time end) {
  RankSpans& R = ranks_[static_cast<size_t>(rank)];
  const int64_t a = start.ps(), b = end.ps();
  assert((b <= a || a >= R.folded_to) && "a span starts before what fold() summed");
  switch (op.kind) {
    case OpKind::Kernel: put(R.kernels, a, b); break;
    case OpKind::Collective:
      put(R.colls, a, b);
      bytes_collective += static_cast<double>(op.bytes);
      R.tally.bytes_collective += static_cast<double>(op.bytes);
      break;
    case OpKind::Memcpy: {
      put(R.copies, a, b);
      if (op.stream == compute_stream_) put(R.compute_copies, a, b);
      const double bytes = static_cast<double>(op.bytes);
      (op.copy == CopyKind::H2D ? bytes_h2d : op.copy == CopyKind::D2H ? bytes_d2h : op.copy == CopyKind::P2P ? bytes_p2p : bytes_d2d) += bytes;
      RankTally& T = R.tally;
      (op.copy == CopyKind::H2D   ? T.bytes_h2d
       : op.copy == CopyKind::D2H ? T.bytes_d2h
       : op.copy == CopyKind::P2P ? T.bytes_p2p
                                  : T.bytes_d2d) += bytes;
      const Time d = end - start;
      const double gbps = d.s() > 0 ? bytes / d.s() * 1e-9 : 1e300;
      for (size_t i = 0; i < kBins.size(); ++i)
        if (gbps >= kBins[i][0] && gbps < kBins[i][1]) {
          for (SpanBin* bin : {&bins_[i], &R.tally.bins[i]}) {
            ++bin->count;
            bin->bytes += bytes;
            bin->time += d;
          }
        }
      break;
    }
    default: break;
  }
  if (op.stream == compute_stream_ && (op.kind == OpKind::Kernel || op.kind == OpKind::Collective || op.kind == OpKind::Memcpy)) put(R.cstream, a, b);
  if (rank == 0 && op.kind == OpKind::Marker && op.stream == compute_stream_ && op.label.rfind("step ", 0) == 0) {
    const int idx = std::atoi(op.label.c_str() + 5);
    if (steps_.empty() || steps_.back().first != idx) steps_.emplace_back(idx, start);
  }
  if (rank == 0 && op.kind == OpKind::Marker && op.stream == compute_stream_ && op.label == kStepsEndMarker) steps_end_ = start;
  if (rank == 0 && (op.kind == OpKind::Marker ? op.stream == compute_stream_ : !stages_.empty())) stages_.add(op, start, end);
}

void RunSpans::mirror(int rank, int of) {
  assert(rank != 0 && "rank 0's step markers are the run's");
  ranks_[static_cast<size_t>(rank)] = ranks_[static_cast<size_t>(of)];
  // Whole bytes and picoseconds: the sums come out the same in any order.
  const RankTally& T = ranks_[static_cast<size_t>(of)].tally;
  bytes_h2d += T.bytes_h2d;
  bytes_d2h += T.bytes_d2h;
  bytes_p2p += T.bytes_p2p;
  bytes_d2d += T.bytes_d2d;
  bytes_collective += T.bytes_collective;
  for (size_t i = 0; i < bins_.size(); ++i) {
    bins_[i].count += T.bins[i].count;
    bins_[i].bytes += T.bins[i].bytes;
    bins_[i].time += T.bins[i].time;
  }
}

}  // namespace osim
