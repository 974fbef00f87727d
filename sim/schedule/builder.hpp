// Building schedules in code: one constructor per op kind (ops::), and a
// builder for the streams, events, groups and per-rank programs. Workload
// generators, calibration's bench replays and tests build through it; a
// built schedule passes the same checks as a parsed one.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "schedule/schedule.hpp"

namespace osim {

namespace ops {
/// A GEMM of [m, n, k] on `stream`.
Op gemm(int stream, int64_t m, int64_t n, int64_t k, DType dtype = DType::BF16, std::string label = {});
/// Attention (SDPA) of `shape` on `stream`.
Op attention(int stream, AttentionShape shape, std::string label = {});
/// A memory-bound kernel moving `hbm_bytes`.
Op memory_kernel(int stream, double hbm_bytes, std::string label = {}, Access access = Access::Elementwise);
/// A kernel holding `stream` for `t` with no work (an idle gap, a start offset).
Op busy(int stream, Time t, std::string label = {});
/// A copy of `bytes` (pinned and async unless said otherwise).
Op copy(int stream, CopyKind kind, Bytes bytes, HostMem mem = HostMem::Pinned, bool async = true, std::string label = {});
/// A collective on `group`.
Op collective(int stream, CollKind coll, int group, Bytes bytes, CollAlgo algo = CollAlgo::Nccl, DType dtype = DType::BF16, std::string label = {});
Op record(int stream, int event);
Op wait_event(int stream, int event);
Op wait_stream(int stream, int on);
Op stream_sync(int stream);
Op device_sync();
Op host_work(Time t);
Op alloc(std::string tag, Bytes bytes, MemSpace space = MemSpace::Device, MemPart part = MemPart::Weights);
/// NCCL's buffers for communicator `group` on the rank (part Comm), sized by the run.
Op nccl_buffers(std::string tag, int group);
Op free(std::string tag);
/// A marker on `stream` ("step N ..." markers time steps on the compute stream).
Op marker(int stream, std::string text);
}  // namespace ops

struct ProgramRoles {
  std::vector<int> groups, peers;
};

class ScheduleBuilder {
 public:
  ScheduleBuilder(std::string name, int ranks);
  /// Index of a stream, event or group, declared on first use.
  int stream(const std::string& name, int priority = 0);
  int event(const std::string& name);
  int group(const std::string& name, std::vector<int> ranks);
  /// Rank r's program so far.
  std::vector<Op>& program(int r) { return programs_[static_cast<size_t>(r)]; }
  void add(int r, Op op) { programs_[static_cast<size_t>(r)].push_back(std::move(op)); }
  /// The schedule's other fields (file, topology, runtime, gpus) before build.
  Schedule& schedule() { return s_; }
  const Schedule& schedule() const { return s_; }
  /// Rank r runs rank `with`'s program (shared, not copied).
  void share_program(int r, int with) { shared_[r] = with; }
  /// Rank r's groups and peers by role (Program::group_roles, peer_roles).
  void set_roles(int r, ProgramRoles roles) {
    Program& p = s_.programs[static_cast<size_t>(r)];
    p.group_roles = std::move(roles.groups);
    p.peer_roles = std::move(roles.peers);
  }
  /// The schedule, checked (check_schedule). The builder is spent.
  Schedule build();

 private:
  Schedule s_;
  std::vector<std::vector<Op>> programs_;
  std::map<int, int> shared_;
  std::map<std::string, int> events_;
};

}  // namespace osim
