// The schedule: the contract between the simulator and `validate`. A per-rank
// program at the level of CUDA/NCCL API calls (README "Schedules"). Parsed
// from YAML/JSON into these plain structs, checked statically (unknown
// streams, groups, events waited on before any record, ...), and written back
// out by to_yaml() so generated schedules can be saved and edited.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/units.hpp"

namespace osim {

enum class OpKind {
  Kernel, Memcpy, EventRecord, StreamWaitEvent, StreamWaitStream, StreamSync, EventSync, DeviceSync,
  Collective, Alloc, Free, HostWork, Marker
};
enum class CopyKind { H2D, D2H, D2D, P2P };
enum class HostMem { Pinned, Pageable };
enum class CollKind { AllToAll, AllGather, ReduceScatter, AllReduce, Send, Recv };
enum class CollAlgo { Nccl, Pairwise, Ring };
enum class DType { BF16, FP16, FP32, FP8 };
enum class MemSpace { Device, PinnedHost };

std::string to_string(OpKind k);
std::string to_string(CopyKind k);
std::string to_string(CollKind k);
std::string to_string(CollAlgo a);
std::string to_string(DType d);
double dtype_bytes(DType d);

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
};
struct AttentionShape {
  int64_t batch = 1, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
};

struct Op {
  OpKind kind = OpKind::Marker;
  std::string label;        // kernel name, marker text, alloc tag; "" = none
  int stream = -1;          // index into Schedule::streams
  int stream2 = -1;         // StreamWaitStream: the stream waited on
  int event = -1;           // index into Schedule::events
  // kernel
  std::optional<Time> duration;
  double flops = 0;
  double hbm_bytes = 0;
  std::optional<GemmShape> gemm;
  std::optional<AttentionShape> attention;
  DType dtype = DType::BF16;
  int sm_limit = 0;         // 0 = all SMs
  double efficiency = 0;    // 0 = the model's default for the class
  // memcpy / alloc / free / collective
  CopyKind copy = CopyKind::H2D;
  HostMem host_mem = HostMem::Pinned;
  bool async = true;
  int peer = -1;            // P2P copy destination rank; send/recv peer rank
  Bytes bytes = 0;
  MemSpace space = MemSpace::Device;
  // collective
  CollKind coll = CollKind::AllToAll;
  CollAlgo algo = CollAlgo::Nccl;
  int group = -1;
  int channels = 0;         // 0 = the model's default
  SourceLocation where;
};

struct Program {
  int rank = 0;
  std::vector<Op> ops;
};

struct StreamDecl {
  std::string name;
  int priority = 0;  // larger = higher priority (unlike CUDA's negative numbers)
};

struct Group {
  std::string name;
  std::vector<int> ranks;
};

/// Runtime knobs a schedule may set (the execution model's parameters live
/// in ModelParams, see exec/model.hpp).
struct RuntimeSettings {
  int device_max_connections = 8;  // CUDA_DEVICE_MAX_CONNECTIONS
  bool nccl_p2p_disable = false;   // NCCL_P2P_DISABLE
};

struct Schedule {
  std::string name;
  std::string file;
  std::string topology;             // optional path, relative to the schedule file
  std::vector<std::string> gpus;    // rank -> topology GPU name; empty = topology order
  RuntimeSettings runtime;
  std::vector<StreamDecl> streams;
  std::vector<std::string> events;
  std::vector<Group> groups;
  std::vector<Program> programs;    // one per rank, programs[r].rank == r
  int ranks() const { return static_cast<int>(programs.size()); }
  int find_stream(const std::string& n) const;
  int find_group(const std::string& n) const;
  int find_event(const std::string& n) const;
};

/// Parses and checks; throws InputError with file:line.
Schedule parse_schedule_file(const std::string& path);
Schedule parse_schedule_string(const std::string& yaml, const std::string& name);
/// Static checks (also run by the parsers); generators call it too.
void check_schedule(const Schedule& s);
/// Serialises to YAML that parse_schedule_string reads back to an equal schedule.
std::string to_yaml(const Schedule& s);

}  // namespace osim
