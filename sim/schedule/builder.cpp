#include "schedule/builder.hpp"

#include <algorithm>

namespace osim {

namespace ops {
namespace {
Op of(OpKind k, int stream = -1, std::string label = {}) {
  Op op;
  op.kind = k;
  op.stream = stream;
  op.label = std::move(label);
  return op;
}
}  // namespace

Op gemm(int stream, int64_t m, int64_t n, int64_t k, DType dtype, std::string label) {
  Op op = of(OpKind::Kernel, stream, std::move(label));
  op.gemm = GemmShape{static_cast<int32_t>(m), static_cast<int32_t>(n), static_cast<int32_t>(k)};
  op.dtype = dtype;
  return op;
}
Op attention(int stream, AttentionShape shape, std::string label) {
  Op op = of(OpKind::Kernel, stream, std::move(label));
  op.attention = shape;
  return op;
}
Op memory_kernel(int stream, double hbm_bytes, std::string label, Access access) {
  Op op = of(OpKind::Kernel, stream, std::move(label));
  op.hbm_bytes = hbm_bytes;
  op.access = access;
  return op;
}
Op busy(int stream, Time t, std::string label) {
  Op op = of(OpKind::Kernel, stream, std::move(label));
  op.duration = t;
  return op;
}
Op copy(int stream, CopyKind kind, Bytes bytes, HostMem mem, bool async, std::string label) {
  Op op = of(OpKind::Memcpy, stream, std::move(label));
  op.copy = kind;
  op.bytes = bytes;
  op.host_mem = mem;
  op.async = async;
  return op;
}
Op collective(int stream, CollKind coll, int group, Bytes bytes, CollAlgo algo, DType dtype, std::string label) {
  Op op = of(OpKind::Collective, stream, std::move(label));
  op.coll = coll;
  op.group = group;
  op.bytes = bytes;
  op.algo = algo;
  op.dtype = dtype;
  return op;
}
Op record(int stream, int event) {
  Op op = of(OpKind::EventRecord, stream);
  op.event = event;
  return op;
}
Op wait_event(int stream, int event) {
  Op op = of(OpKind::StreamWaitEvent, stream);
  op.event = event;
  return op;
}
Op wait_stream(int stream, int on) {
  Op op = of(OpKind::StreamWaitStream, stream);
  op.stream2 = on;
  return op;
}
Op stream_sync(int stream) { return of(OpKind::StreamSync, stream); }
Op device_sync() { return of(OpKind::DeviceSync); }
Op host_work(Time t) {
  Op op = of(OpKind::HostWork);
  op.duration = t;
  return op;
}
Op alloc(std::string tag, Bytes bytes, MemSpace space, MemPart part) {
  Op op = of(OpKind::Alloc, -1, std::move(tag));
  op.bytes = bytes;
  op.space = space;
  op.part = part;
  return op;
}
Op nccl_buffers(std::string tag, int group) {
  Op op = of(OpKind::Alloc, -1, std::move(tag));
  op.group = group;
  op.part = MemPart::Comm;
  return op;
}
Op free(std::string tag) { return of(OpKind::Free, -1, std::move(tag)); }
Op marker(int stream, std::string text) { return of(OpKind::Marker, stream, std::move(text)); }
}  // namespace ops

ScheduleBuilder::ScheduleBuilder(std::string name, int ranks) : programs_(static_cast<size_t>(ranks)) {
  s_.name = std::move(name);
  s_.programs.resize(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) s_.programs[static_cast<size_t>(r)].rank = r;
}

int ScheduleBuilder::stream(const std::string& name, int priority) {
  if (const int i = s_.find_stream(name); i >= 0) return i;
  s_.streams.push_back({name, priority});
  return static_cast<int>(s_.streams.size()) - 1;
}

int ScheduleBuilder::event(const std::string& name) {
  auto it = events_.find(name);
  if (it != events_.end()) return it->second;
  s_.events.push_back(name);
  return events_[name] = static_cast<int>(s_.events.size()) - 1;
}

int ScheduleBuilder::group(const std::string& name, std::vector<int> ranks) {
  if (const int i = s_.find_group(name); i >= 0) return i;
  s_.groups.push_back({name, std::move(ranks)});
  return static_cast<int>(s_.groups.size()) - 1;
}

Schedule ScheduleBuilder::build() {
  for (size_t r = 0; r < programs_.size(); ++r)
    if (!shared_.count(static_cast<int>(r))) s_.programs[r].ops = std::make_shared<const std::vector<Op>>(std::move(programs_[r]));
  for (const auto& [r, with] : shared_) s_.programs[static_cast<size_t>(r)].ops = s_.programs[static_cast<size_t>(with)].ops;
  check_schedule(s_);
  return std::move(s_);
}

}  // namespace osim
