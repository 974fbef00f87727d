// A schedule written as YAML (docs/formats/schedule.md), ops in flow style.
#include <cassert>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "schedule/schedule.hpp"
#include "schedule/schedule_names.hpp"

namespace osim {

using namespace schedule_names;

std::string to_yaml(const Schedule& s) {
  assert(!s.generated_as_run() && "a schedule generated as it runs has no ops to write");
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << s.name;
  if (!s.topology.empty()) e << YAML::Key << "topology" << YAML::Value << s.topology;
  e << YAML::Key << "ranks" << YAML::Value << s.ranks();
  if (!s.gpus.empty()) e << YAML::Key << "gpus" << YAML::Value << YAML::Flow << s.gpus;
  e << YAML::Key << "settings" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "device_max_connections" << YAML::Value
    << s.runtime.device_max_connections << YAML::Key << "nccl_p2p_disable" << YAML::Value << s.runtime.nccl_p2p_disable;
  if (s.runtime.nccl_nvls_enable) e << YAML::Key << "nccl_nvls_enable" << YAML::Value << true;
  if (s.runtime.framework == Framework::PyTorch)
    e << YAML::Key << "framework" << YAML::Value << "pytorch";
  else if (s.runtime.framework_kernels)
    e << YAML::Key << "framework_kernels" << YAML::Value << true;
  if (const auto& c = s.runtime.host_calls; c.any()) {
    e << YAML::Key << "host_calls" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [key, field] : RuntimeSettings::HostCalls::kFields)
      if (const auto& v = c.*field) e << YAML::Key << key << YAML::Value << fmt::format("{} ps", v->ps());
    e << YAML::EndMap;
  }
  if (const auto& c = s.runtime.copy_rates; c.any()) {
    e << YAML::Key << "copy_rates" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [key, field] : RuntimeSettings::CopyRates::kFields)
      if (const auto& v = c.*field) e << YAML::Key << key << YAML::Value << fmt::format("{:.6g} GB/s", v->GBps());
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  e << YAML::Key << "streams" << YAML::Value << YAML::BeginSeq;
  for (const auto& d : s.streams)
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << d.name << YAML::Key << "priority" << YAML::Value << d.priority
      << YAML::EndMap;
  e << YAML::EndSeq;
  e << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq;
  for (const auto& g : s.groups)
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << g.name << YAML::Key << "ranks" << YAML::Value << YAML::Flow << g.ranks
      << YAML::EndMap;
  e << YAML::EndSeq;
  auto dur = [](Time t) { return fmt::format("{} ps", t.ps()); };
  e << YAML::Key << "programs" << YAML::Value << YAML::BeginSeq;
  for (const Program& p : s.programs) {
    e << YAML::BeginMap << YAML::Key << "rank" << YAML::Value << p.rank << YAML::Key << "ops" << YAML::Value << YAML::BeginSeq;
    for (const Op& op : *p.ops) {
      e << YAML::Flow << YAML::BeginMap << YAML::Key << "op" << YAML::Value << to_string(op.kind);
      auto kv = [&](const char* k, const auto& v) { e << YAML::Key << k << YAML::Value << v; };
      auto stream = [&](const char* k, int i) { kv(k, s.streams[i].name); };
      switch (op.kind) {
        case OpKind::Kernel:
          kv("name", op.label);
          stream("stream", op.stream);
          if (op.duration) kv("duration", dur(*op.duration));
          if (size_t n = op.beside_copies_ns.size(); op.duration) {
            while (n > 0 && op.beside_copies_ns[n - 1] == 0) --n;
            if (n > 0) {
              e << YAML::Key << "beside_copies" << YAML::Value << YAML::Flow << YAML::BeginSeq;
              for (size_t i = 0; i < n; ++i) e << fmt::format("{} ns", op.beside_copies_ns[i]);
              e << YAML::EndSeq;
            }
          }
          if (op.gemm) {
            e << YAML::Key << "gemm" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "m" << YAML::Value << op.gemm->m << YAML::Key
              << "n" << YAML::Value << op.gemm->n << YAML::Key << "k" << YAML::Value << op.gemm->k << YAML::EndMap;
          }
          if (op.attention) {
            const auto& a = *op.attention;
            e << YAML::Key << "attention" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "batch" << YAML::Value << a.batch
              << YAML::Key << "heads" << YAML::Value << a.heads << YAML::Key << "seq" << YAML::Value << a.seq_q << YAML::Key << "seq_kv"
              << YAML::Value << a.seq_kv << YAML::Key << "head_dim" << YAML::Value << a.head_dim;
            if (a.backend != AttnBackend::Default) e << YAML::Key << "backend" << YAML::Value << to_string(a.backend);
            if (a.causal) e << YAML::Key << "causal" << YAML::Value << true;
            e << YAML::EndMap;
          }
          if (!op.gemm && !op.attention && (op.flops > 0 || op.hbm_bytes > 0 || !op.duration)) {
            kv("flops", fmt::format("{}", op.flops));
            kv("bytes", fmt::format("{}", static_cast<int64_t>(op.hbm_bytes)));
            if (op.access != Access::Elementwise) kv("access", to_string(op.access));
            if (op.norm_row > 0) kv("row", op.norm_row);
          }
          if (op.conv) {
            const auto& c = *op.conv;
            e << YAML::Key << "conv" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "positions" << YAML::Value << c.positions
              << YAML::Key << "in_positions" << YAML::Value << c.in_positions << YAML::Key << "cin" << YAML::Value << c.cin << YAML::Key << "cout"
              << YAML::Value << c.cout << YAML::Key << "taps" << YAML::Value << c.taps;
            if (c.tf32) e << YAML::Key << "tf32" << YAML::Value << true;
            if (c.channels_last) e << YAML::Key << "channels_last" << YAML::Value << true;
            e << YAML::EndMap;
          }
          kv("dtype", to_string(op.dtype));
          if (op.sm_limit > 0) kv("sm_limit", op.sm_limit);
          if (op.sm_limit < 0) kv("sm_margin", -op.sm_limit);
          if (op.efficiency > 0) kv("efficiency", fmt::format("{}", op.efficiency));
          break;
        case OpKind::Memcpy:
          kv("name", op.label);
          kv("kind", to_string(op.copy));
          kv("bytes", op.bytes);
          stream("stream", op.stream);
          if (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H) kv("host", op.host_mem == HostMem::Pinned ? "pinned" : "pageable");
          if (op.host_span > 0) kv("host_span", op.host_span);
          kv("async", op.async);
          if (op.copy == CopyKind::P2P) kv("peer", p.peer_of(op));
          break;
        case OpKind::EventRecord:
          kv("event", s.events[op.event]);
          stream("stream", op.stream);
          break;
        case OpKind::StreamWaitEvent:
          stream("stream", op.stream);
          kv("event", s.events[op.event]);
          break;
        case OpKind::StreamWaitStream:
          stream("stream", op.stream);
          stream("on", op.stream2);
          break;
        case OpKind::StreamSync: stream("stream", op.stream); break;
        case OpKind::EventSync: kv("event", s.events[op.event]); break;
        case OpKind::DeviceSync: break;
        case OpKind::Collective:
          kv("name", op.label);
          kv("kind", to_string(op.coll));
          kv("bytes", op.bytes);
          stream("stream", op.stream);
          if (op.coll == CollKind::Send || op.coll == CollKind::Recv) {
            kv("peer", p.peer_of(op));
          } else {
            kv("group", s.groups[static_cast<size_t>(p.group_of(op))].name);
            kv("algorithm", to_string(op.algo));
          }
          kv("dtype", to_string(op.dtype));
          if (op.channels) kv("channels", op.channels);
          break;
        case OpKind::Alloc:
          kv("tag", op.label);
          if (op.group != -1) {
            kv("group", s.groups[static_cast<size_t>(p.group_of(op))].name);
            if (op.nccl_runs != kNcclAllToAll) {
              e << YAML::Key << "runs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
              for (size_t b = 0; b < kNcclRunsNames.size(); ++b)
                if (op.nccl_runs & (1u << b)) e << kNcclRunsNames[b];
              e << YAML::EndSeq;
            }
            break;
          }
          kv("bytes", op.bytes);
          kv("space", op.space == MemSpace::Device ? "device" : "pinned_host");
          if (op.part != MemPart::Weights) kv("component", to_string(op.part));
          if (op.launches == 0) kv("loaded", true);
          break;
        case OpKind::Free:
          kv("tag", op.label);
          if (op.stream >= 0) stream("stream", op.stream);
          break;
        case OpKind::HostWork:
          kv("name", op.label);
          kv("duration", dur(*op.duration));
          break;
        case OpKind::Marker:
          kv("name", op.label);
          if (op.stream >= 0) stream("stream", op.stream);
          break;
      }
      if (op.launches != 1 && op.kind != OpKind::Alloc) kv("launches", static_cast<int>(op.launches));
      if (op.views > 0) kv("views", static_cast<int>(op.views));
      e << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace osim
