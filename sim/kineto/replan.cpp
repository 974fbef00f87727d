#include "kineto/replan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "schedule/builder.hpp"

namespace osim::kineto {

namespace {

// What an op of the program is to the pattern. Host work goes with the op
// after it where that op is the pattern's (the host time spent issuing it).
enum class Role : uint8_t { Body, Copies, BatchRecord, BatchWait, BlockWait, Drop };

struct Found {
  int copy_stream = -1;  // -1: the copies are on the compute stream (depth 0)
  std::vector<Role> role;
  std::vector<int> owner;                       // per op: its block (Copies, BlockWait) or batch (Batch*)
  std::vector<std::vector<int>> copies, waits;  // per block: its copies' ops (with their host work), its wait's
  std::vector<std::vector<int>> batches;        // per batch: its record's and wait's ops
  std::vector<std::vector<int>> body;           // per block + 1 (index 0: before the first block): the ops kept in place
  std::vector<int> issued_before;               // per block: the block before whose wait its copies are issued (0..)
  std::vector<Bytes> bytes;                     // per block: its copies' bytes
  int64_t n_copies = 0;
  int depth = 0, resident = 0;
};

std::string stream_name(const Schedule& s, int i) {
  return i >= 0 && i < static_cast<int>(s.streams.size()) ? s.streams[static_cast<size_t>(i)].name : "?";
}

class Recogniser {
 public:
  Recogniser(const Schedule& s, const std::vector<Op>& p, int rank, const std::string& where)
      : s_(s), p_(p), rank_(rank), where_(where), c_(s.find_stream("compute")) {}

  Found run() {
    if (c_ < 0) refuse("no stream named 'compute' (the stream an import gives the most kernel time): not an imported program");
    f_.role.assign(p_.size(), Role::Body);
    f_.owner.assign(p_.size(), -1);
    std::map<int, int64_t> h2d_per_stream;
    for (const Op& op : p_)
      if (op.kind == OpKind::Memcpy && op.copy == CopyKind::H2D) ++h2d_per_stream[op.stream];
    if (h2d_per_stream.empty())
      refuse(
          "no host-to-device copies: there is no weight prefetch to re-plan (the pattern: each block's weights copied to the GPU before "
          "the block runs)");
    std::vector<std::string> side;
    for (const auto& [st, n] : h2d_per_stream)
      if (st != c_) side.push_back(fmt::format("{} on '{}'", n, stream_name(s_, st)));
    if (side.size() > 1)
      refuse(
          fmt::format("host-to-device copies on {} streams besides the compute stream ({}): the pattern has one copy stream; which "
                      "copies are the blocks' weights is ambiguous",
                      side.size(), fmt::join(side, ", ")));
    if (side.size() == 1) {
      for (const auto& [st, n] : h2d_per_stream)
        if (st != c_) f_.copy_stream = st;
      copy_stream_pattern();
    } else {
      blocking_pattern(h2d_per_stream[c_]);
    }
    carry_host_work();
    regions();
    depth();
    return std::move(f_);
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw InputError(SourceLocation{where_, 0, 0}, fmt::format("--prefetch: rank {}: {}", rank_, why));
  }
  // The op that last recorded `event` before op `at` (-1: none).
  int record_before(int event, int at) const {
    for (int i = at - 1; i >= 0; --i)
      if (p_[static_cast<size_t>(i)].kind == OpKind::EventRecord && p_[static_cast<size_t>(i)].event == event) return i;
    return -1;
  }
  // The op before `at` that is not host work (-1: none).
  int previous(int at) const {
    for (int i = at - 1; i >= 0; --i)
      if (p_[static_cast<size_t>(i)].kind != OpKind::HostWork) return i;
    return -1;
  }
  void set(int i, Role r, int owner) {
    f_.role[static_cast<size_t>(i)] = r;
    f_.owner[static_cast<size_t>(i)] = owner;
  }

  // Depth >= 1 (or 0 on a stream of its own): copies on the copy stream, a
  // record closing each block's, the compute stream waiting on it.
  void copy_stream_pattern() {
    const int S = f_.copy_stream;
    const int n = static_cast<int>(p_.size());
    std::vector<int> cur, group_record, extra_records, batch_waits;
    std::map<std::string, int64_t> foreign;
    for (int i = 0; i < n; ++i) {
      const Op& op = p_[static_cast<size_t>(i)];
      if (op.kind == OpKind::HostWork || op.stream != S) continue;
      if (op.kind == OpKind::Memcpy && op.copy == CopyKind::H2D) {
        cur.push_back(i);
      } else if (op.kind == OpKind::EventRecord) {
        if (cur.empty()) {
          extra_records.push_back(i);
          continue;
        }
        const int b = static_cast<int>(f_.copies.size());
        for (int j : cur) set(j, Role::Copies, b);
        set(i, Role::Copies, b);
        f_.copies.push_back(cur);
        f_.bytes.push_back(0);
        for (int j : cur) f_.bytes.back() += p_[static_cast<size_t>(j)].bytes;
        f_.n_copies += static_cast<int64_t>(cur.size());
        group_record.push_back(i);
        cur.clear();
      } else if (op.kind == OpKind::StreamWaitEvent) {
        batch_waits.push_back(i);
      } else {
        ++foreign[op.kind == OpKind::Memcpy ? to_string(op.copy) + " copy" : to_string(op.kind)];
      }
    }
    if (!foreign.empty()) {
      std::vector<std::string> what;
      for (const auto& [k, m] : foreign) what.push_back(fmt::format("{} {}", m, k));
      refuse(
          fmt::format("the copy stream '{}' holds {} besides its {} host-to-device copies: not the layerwise prefetch pattern (a copy "
                      "stream of weight copies, records and waits only)",
                      stream_name(s_, S), fmt::join(what, ", "), f_.n_copies + static_cast<int64_t>(cur.size())));
    }
    if (!cur.empty())
      refuse(
          fmt::format("{} host-to-device copies on '{}' after its last event record: a block's copies end with a record the compute "
                      "stream waits on",
                      cur.size(), stream_name(s_, S)));
    // The compute stream's waits on the copy stream's records: one per block, in order.
    const std::set<int> copy_records(group_record.begin(), group_record.end());
    std::set<int> on_copy_stream(copy_records);
    on_copy_stream.insert(extra_records.begin(), extra_records.end());
    int64_t others = 0;
    for (int i = 0; i < n; ++i) {
      const Op& op = p_[static_cast<size_t>(i)];
      if (op.kind != OpKind::StreamWaitEvent && op.kind != OpKind::EventSync) continue;
      const int r = record_before(op.event, i);
      if (r < 0 || !on_copy_stream.count(r)) continue;
      if (op.kind == OpKind::StreamWaitEvent && op.stream == c_) {
        set(i, Role::BlockWait, static_cast<int>(f_.waits.size()));
        f_.waits.push_back({i});
      } else {
        ++others;
      }
    }
    if (others > 0)
      refuse(
          fmt::format("{} waits other than the compute stream's (event synchronizes, other streams) wait on the copy stream '{}': the "
                      "pattern's records are waited on by the compute stream only",
                      others, stream_name(s_, S)));
    if (f_.waits.size() != f_.copies.size())
      refuse(
          fmt::format("{} blocks' copies ({} host-to-device copies, each block's closed by a record on '{}') but {} waits of the compute "
                      "stream on them: the pattern has one wait before each block",
                      f_.copies.size(), f_.n_copies, stream_name(s_, S), f_.waits.size()));
    for (size_t b = 0; b < f_.copies.size(); ++b)
      if (f_.waits[b][0] < group_record[b])
        refuse(fmt::format("block {}'s wait comes before its copies were issued (op {} against op {}): not the pattern", b, f_.waits[b][0],
                           group_record[b]));
    // The copy stream's waits on the compute stream (wait_stream): a batch
    // each, with the record it waits on where that is the op just before it.
    const std::set<int> extra(extra_records.begin(), extra_records.end());
    for (int i : batch_waits) {
      const int k = static_cast<int>(f_.batches.size());
      set(i, Role::BatchWait, k);
      const int before = previous(i);
      const int r = record_before(p_[static_cast<size_t>(i)].event, i);
      if (before >= 0 && (extra.count(before) || (before == r && p_[static_cast<size_t>(r)].stream == c_ && waited_once(r))))
        set(before, Role::BatchRecord, k);
      f_.batches.push_back({});
    }
    for (int i : extra_records)
      if (f_.role[static_cast<size_t>(i)] == Role::Body) set(i, Role::Drop, -1);  // records of nothing: no copies before them
  }
  // Whether the record at `r` is waited on by one op only.
  bool waited_once(int r) const {
    int n = 0;
    for (int i = r + 1; i < static_cast<int>(p_.size()); ++i) {
      const Op& op = p_[static_cast<size_t>(i)];
      if (op.kind == OpKind::EventRecord && op.event == p_[static_cast<size_t>(r)].event) break;
      if ((op.kind == OpKind::StreamWaitEvent || op.kind == OpKind::EventSync) && op.event == p_[static_cast<size_t>(r)].event) ++n;
    }
    return n == 1;
  }

  // Depth 0: each block's copies on the compute stream, then a synchronize.
  void blocking_pattern(int64_t on_compute) {
    const int n = static_cast<int>(p_.size());
    int64_t unsynced = 0;
    for (int i = 0; i < n;) {
      const Op& op = p_[static_cast<size_t>(i)];
      if (!(op.kind == OpKind::Memcpy && op.copy == CopyKind::H2D && op.stream == c_)) {
        ++i;
        continue;
      }
      std::vector<int> cur{i};
      int j = i + 1;
      for (; j < n; ++j) {
        const Op& o = p_[static_cast<size_t>(j)];
        if (o.kind == OpKind::HostWork) continue;
        if (o.kind == OpKind::Memcpy && o.copy == CopyKind::H2D && o.stream == c_) {
          cur.push_back(j);
          continue;
        }
        break;
      }
      const bool sync = j < n && (p_[static_cast<size_t>(j)].kind == OpKind::DeviceSync ||
                                  (p_[static_cast<size_t>(j)].kind == OpKind::StreamSync && p_[static_cast<size_t>(j)].stream == c_));
      if (!sync) {
        unsynced += static_cast<int64_t>(cur.size());
        i = j;
        continue;
      }
      const int b = static_cast<int>(f_.copies.size());
      for (int k : cur) set(k, Role::Copies, b);
      set(j, Role::BlockWait, b);
      f_.copies.push_back(cur);
      f_.waits.push_back({j});
      f_.bytes.push_back(0);
      for (int k : cur) f_.bytes.back() += p_[static_cast<size_t>(k)].bytes;
      f_.n_copies += static_cast<int64_t>(cur.size());
      i = j + 1;
    }
    if (f_.copies.empty())
      refuse(
          fmt::format("{} host-to-device copies, all on the compute stream and none followed by a synchronize: neither copies ahead on a "
                      "copy stream nor blocking copies before each block",
                      on_compute));
    if (unsynced > 0)
      refuse(
          fmt::format("{} blocks' blocking copies (on the compute stream, each followed by a synchronize) and {} host-to-device copies "
                      "on it not followed by one: which copies are the blocks' weights is ambiguous",
                      f_.copies.size(), unsynced));
  }

  // Host work before an op of the pattern is the time spent issuing it: it goes with it.
  void carry_host_work() {
    for (int i = static_cast<int>(p_.size()) - 2; i >= 0; --i) {
      const size_t u = static_cast<size_t>(i);
      if (p_[u].kind != OpKind::HostWork) continue;
      const Role next = f_.role[u + 1];
      if (next == Role::Body || next == Role::Drop) continue;
      f_.role[u] = next;
      f_.owner[u] = f_.owner[u + 1];
    }
    // Each owner's ops in program order (host work included).
    for (auto& v : f_.copies) v.clear();
    for (auto& v : f_.waits) v.clear();
    for (size_t i = 0; i < p_.size(); ++i) {
      const int o = f_.owner[i];
      switch (f_.role[i]) {
        case Role::Copies: f_.copies[static_cast<size_t>(o)].push_back(static_cast<int>(i)); break;
        case Role::BlockWait: f_.waits[static_cast<size_t>(o)].push_back(static_cast<int>(i)); break;
        case Role::BatchRecord:
        case Role::BatchWait: f_.batches[static_cast<size_t>(o)].push_back(static_cast<int>(i)); break;
        default: break;
      }
    }
  }

  // The ops kept in place, by the block they follow; where each block's copies were issued.
  void regions() {
    const size_t blocks = f_.copies.size();
    f_.body.assign(blocks + 1, {});
    f_.issued_before.assign(blocks, 0);
    int region = 0;  // blocks whose wait is behind
    for (size_t i = 0; i < p_.size(); ++i) {
      const Role r = f_.role[i];
      if (r == Role::BlockWait && p_[i].kind != OpKind::HostWork) region = f_.owner[i] + 1;
      if (r == Role::Body) f_.body[static_cast<size_t>(region)].push_back(static_cast<int>(i));
      if (r == Role::Copies && p_[i].kind == OpKind::Memcpy && f_.issued_before[static_cast<size_t>(f_.owner[i])] == 0)
        f_.issued_before[static_cast<size_t>(f_.owner[i])] = region + 1;  // stored +1 until the end
    }
    for (int& b : f_.issued_before) b -= 1;
  }

  // The depth: the fewest blocks whose copies were issued ahead of a block,
  // over the blocks before the last copies' issue; the blocks resident at once.
  void depth() {
    if (f_.copy_stream < 0) {
      f_.depth = 0, f_.resident = 1;
      return;
    }
    const int B = static_cast<int>(f_.copies.size());
    int best = -1;
    for (int g = 0; g < B; ++g) {
      int issued = 0;
      for (int j = 0; j < B; ++j) issued += f_.issued_before[static_cast<size_t>(j)] <= g ? 1 : 0;
      f_.resident = std::max(f_.resident, issued - g);
      if (issued < B && (best < 0 || issued - g - 1 < best)) best = issued - g - 1;
      if (g == 0 && issued == B) best = B - 1;
    }
    f_.depth = std::max(0, best);
  }

  const Schedule& s_;
  const std::vector<Op>& p_;
  int rank_;
  const std::string& where_;
  int c_;
  Found f_;
};

// When block j's copies are issued at depth N: before block issue[j]'s wait
// (the batches of dit_offload.py and sglang: the first N before block 0, then
// at every N-th block of a cycle the next N).
std::vector<int> issue_plan(int B, int N, int cycle, std::vector<int>* batch_at) {
  std::vector<int> at(static_cast<size_t>(B), -1);
  if (N == 0) {
    for (int g = 0; g < B; ++g) at[static_cast<size_t>(g)] = g;
    return at;
  }
  for (int j = 0; j < std::min(N, B); ++j) at[static_cast<size_t>(j)] = 0;
  for (int g = 0; g < B; ++g) {
    if (g % cycle % N != 0) continue;
    batch_at->push_back(g);
    for (int j = g + N; j < std::min(g + 2 * N, B); ++j)
      if (at[static_cast<size_t>(j)] < 0) at[static_cast<size_t>(j)] = g;
  }
  for (int j = 0; j < B; ++j)  // a block no batch reaches (a cycle not a multiple of N can leave one): before its own wait
    if (at[static_cast<size_t>(j)] < 0) at[static_cast<size_t>(j)] = j;
  return at;
}

// Writes rank r's program at depth N.
std::vector<Op> rewrite(const Schedule& in, Schedule& out, const std::vector<Op>& p, const Found& f, int r, const ReplanOptions& o, int copy_stream,
                        int64_t* moved, int* resident) {
  const int c = in.find_stream("compute");
  const int B = static_cast<int>(f.copies.size());
  const int N = o.prefetch;
  std::vector<int> batch_at;
  const std::vector<int> at = issue_plan(B, N, o.cycle > 0 ? o.cycle : B, &batch_at);
  auto event = [&out](const std::string& name) {
    out.events.push_back(name);
    return static_cast<int>(out.events.size()) - 1;
  };
  std::vector<int> ready(static_cast<size_t>(B), -1);
  std::vector<Op> q;
  std::vector<bool> fetched(static_cast<size_t>(B), false);
  auto tag = [r](int b) { return fmt::format("prefetch r{} block {}", r, b); };
  auto fetch = [&](int b) {
    if (fetched[static_cast<size_t>(b)]) return;
    fetched[static_cast<size_t>(b)] = true;
    Op a = ops::alloc(tag(b), f.bytes[static_cast<size_t>(b)]);
    a.launches = 0;  // the allocator's time is in the host work measured around the copy
    q.push_back(a);
    for (int i : f.copies[static_cast<size_t>(b)]) {
      Op op = p[static_cast<size_t>(i)];
      if (op.kind == OpKind::EventRecord) continue;  // written below, on the copy stream
      if (op.kind == OpKind::Memcpy) op.stream = N == 0 ? c : copy_stream;
      q.push_back(std::move(op));
    }
    if (N > 0) {
      ready[static_cast<size_t>(b)] = event(fmt::format("pf_r{}_block{}", r, b));
      q.push_back(ops::record(copy_stream, ready[static_cast<size_t>(b)]));
    }
  };
  for (int i : f.body[0]) q.push_back(p[static_cast<size_t>(i)]);
  for (int j = 0; j < std::min(N, B); ++j) fetch(j);  // the first N, before the first batch
  size_t next_batch = 0;
  for (int g = 0; g < B; ++g) {
    if (N > 0 && next_batch < batch_at.size() && batch_at[next_batch] == g) {
      const size_t k = next_batch++;
      const int ev = event(fmt::format("pf_r{}_batch{}", r, k));
      const std::vector<int>* src = f.batches.empty() ? nullptr : &f.batches[std::min(k, f.batches.size() - 1)];
      bool recorded = false, waited = false;
      if (src)
        for (int i : *src) {
          const Op& op = p[static_cast<size_t>(i)];
          if (op.kind == OpKind::HostWork) q.push_back(op);
          if (op.kind == OpKind::EventRecord) q.push_back(ops::record(c, ev)), recorded = true;
          if (op.kind == OpKind::StreamWaitEvent) {
            if (!recorded) q.push_back(ops::record(c, ev)), recorded = true;
            q.push_back(ops::wait_event(copy_stream, ev)), waited = true;
          }
        }
      if (!recorded) q.push_back(ops::record(c, ev));
      if (!waited) q.push_back(ops::wait_event(copy_stream, ev));
    }
    for (int j = 0; j < B; ++j)  // the batch's (depth 0: the block's own)
      if (at[static_cast<size_t>(j)] == g) fetch(j);
    int issued = 0;
    for (int j = 0; j < B; ++j) issued += fetched[static_cast<size_t>(j)] ? 1 : 0;
    *resident = std::max(*resident, issued - g);
    for (int i : f.waits[static_cast<size_t>(g)])
      if (p[static_cast<size_t>(i)].kind == OpKind::HostWork) q.push_back(p[static_cast<size_t>(i)]);
    q.push_back(N > 0 ? ops::wait_event(c, ready[static_cast<size_t>(g)]) : ops::stream_sync(c));
    for (int i : f.body[static_cast<size_t>(g) + 1]) q.push_back(p[static_cast<size_t>(i)]);
    Op fr = ops::free(tag(g));
    fr.stream = c;  // returned once the block's kernels are done
    q.push_back(fr);
  }
  for (int j = 0; j < B; ++j) *moved += at[static_cast<size_t>(j)] != f.issued_before[static_cast<size_t>(j)] ? 1 : 0;
  return q;
}

}  // namespace

std::string ReplanSummary::text() const {
  const std::string how = asked == 0 ? "a blocking copy before each block"
                                     : fmt::format("every {0} blocks of a cycle of {1}, the next {0} blocks' copies issued", asked, cycle);
  return fmt::format(
      "re-planned (--prefetch {}): layer-weight prefetch depth {} -> {} ({}), {} rank(s): {} blocks, {} host-to-device copies ({} per "
      "block), {} blocks' copies issued before another block than measured\n"
      "  weight buffers on the GPU at once: {} -> {} ({} -> {}); kernels, collectives and host time between the copies as measured\n",
      asked, found, asked, how, ranks, blocks, copies, format_bytes(static_cast<double>(block_bytes)), moved, resident_found, resident_asked,
      format_bytes(static_cast<double>(block_bytes) * resident_found), format_bytes(static_cast<double>(block_bytes) * resident_asked));
}

Schedule replan_prefetch(const Schedule& s, const ReplanOptions& o, const std::string& where, ReplanSummary* summary) {
  if (o.prefetch < 0) throw InputError(SourceLocation{}, fmt::format("--prefetch {}: a depth of 0 or more blocks", o.prefetch));
  if (o.cycle < 0) throw InputError(SourceLocation{}, fmt::format("--prefetch-cycle {}: a number of blocks, 1 or more", o.cycle));
  if (s.generated_as_run()) throw InputError(SourceLocation{where, 0, 0}, "--prefetch: a generated program (re-plan an imported one)");
  Schedule out = s;
  ReplanSummary sum;
  sum.ranks = s.ranks();
  sum.asked = o.prefetch;
  int copy_stream = -1;
  std::map<const std::vector<Op>*, std::shared_ptr<const std::vector<Op>>> done;  // programs shared by ranks are re-planned once
  for (int r = 0; r < s.ranks(); ++r) {
    const auto& prog = s.programs[static_cast<size_t>(r)].ops;
    if (auto it = done.find(prog.get()); it != done.end()) {
      out.programs[static_cast<size_t>(r)].ops = it->second;
      continue;
    }
    const Found f = Recogniser(s, *prog, r, where).run();
    const int B = static_cast<int>(f.copies.size());
    if (r == 0) {
      sum.found = f.depth, sum.blocks = B, sum.copies = f.n_copies, sum.resident_found = f.resident;
      sum.cycle = o.cycle > 0 ? o.cycle : B;
      for (Bytes b : f.bytes) sum.block_bytes = std::max(sum.block_bytes, b);
    } else if (f.depth != sum.found || B != sum.blocks) {
      throw InputError(SourceLocation{where, 0, 0},
                       fmt::format("--prefetch: rank {} prefetches {} blocks at depth {} where rank 0 prefetches {} at depth {}: the ranks of one "
                                   "job run one plan",
                                   r, B, f.depth, sum.blocks, sum.found));
    }
    if (B < 2)
      throw InputError(
          SourceLocation{where, 0, 0},
          fmt::format("--prefetch: rank {}: {} block's copies found ({} host-to-device copies): nothing to issue ahead", r, B, f.n_copies));
    if (o.prefetch > 0 && copy_stream < 0) {
      if (f.copy_stream >= 0) {
        copy_stream = f.copy_stream;
      } else {
        std::string name = "copy";
        while (out.find_stream(name) >= 0) name += "_";
        out.streams.push_back({name, 0});
        copy_stream = static_cast<int>(out.streams.size()) - 1;
      }
    }
    int64_t moved = 0;
    int resident = 0;
    auto ops = std::make_shared<const std::vector<Op>>(rewrite(s, out, *prog, f, r, o, copy_stream, &moved, &resident));
    if (r == 0) sum.moved = moved, sum.resident_asked = resident;
    out.programs[static_cast<size_t>(r)].ops = ops;
    done[prog.get()] = ops;
  }
  check_schedule(out);
  if (summary) *summary = sum;
  return out;
}

}  // namespace osim::kineto
