// The schedule: the contract between the simulator and `validate`. A per-rank
// program at the level of CUDA/NCCL API calls (docs/formats/schedule.md). Parsed
// from YAML/JSON into these plain structs, checked statically (unknown
// streams, groups, events waited on before any record, ...), and written back
// out by to_yaml() so generated schedules can be saved and edited.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/units.hpp"
#include "io/override.hpp"

namespace osim {

enum class OpKind : uint8_t {
  Kernel,
  Memcpy,
  EventRecord,
  StreamWaitEvent,
  StreamWaitStream,
  StreamSync,
  EventSync,
  DeviceSync,
  Collective,
  Alloc,
  Free,
  HostWork,
  Marker
};
enum class CopyKind : uint8_t { H2D, D2H, D2D, P2P };
enum class HostMem : uint8_t { Pinned, Pageable };
enum class CollKind : uint8_t { AllToAll, AllGather, ReduceScatter, AllReduce, Send, Recv };
enum class CollAlgo : uint8_t { Nccl, Pairwise, Ring };
enum class DType : uint8_t { BF16, FP16, FP32, FP8 };
enum class MemSpace : uint8_t { Device, PinnedHost };
// What a device allocation holds (docs/formats/metrics.md "Peak VRAM"):
// block weights, the forward's activations, library workspaces, what sits
// outside the blocks (text encoder, VAE, embeddings), the runtime's own
// memory (CUDA context, modules, handles), the caching allocator's
// reserve beyond what it hands out, and NCCL's buffers for a communicator
// (an alloc naming a group: the run sizes it, VramParams).
enum class MemPart : uint8_t { Weights, Activations, Workspace, Outside, Runtime, Reserve, Comm };
inline constexpr int kMemParts = 7;
// How a memory-bound kernel walks memory: a framework's own kernels reach
// different shares of the HBM bandwidth by it (MemoryParams): contiguous
// elementwise ops, norms (of either kind, or a layer norm, or an RMS norm:
// the kind matters over short rows), an operand broadcast over the tokens
// (adaLN's scale, shift and gates), ops on strided views (splits), roll;
// on 5-D channels-first tensors (video VAEs): a norm over the channels
// (F.normalize), indexed copies (a cat along frames, a stack, a per-channel
// broadcast), a constant pad of every side, nearest upsampling. The last
// four reach different shares at 4- and 2-byte elements (the op's dtype).
enum class Access : uint8_t { Elementwise, Norm, Broadcast, Strided, Roll, LayerNorm, RmsNorm, ChannelNorm, Indexed, Pad, Upsample };
inline constexpr int kAccessKinds = 11;
inline bool is_norm(Access a) { return a == Access::Norm || a == Access::LayerNorm || a == Access::RmsNorm; }
// The fused attention kernel that runs an attention op: PyTorch SDPA's
// backends. `Default` is whichever the framework picks on the GPU.
enum class AttnBackend : uint8_t { Default, Cudnn, Flash2, Flash3, Efficient, Math };

std::string to_string(OpKind k);
std::string to_string(CopyKind k);
std::string to_string(CollKind k);
std::string to_string(CollAlgo a);
std::string to_string(DType d);
std::string to_string(AttnBackend b);
std::string to_string(MemPart p);
std::string to_string(Access a);
/// Every access kind's name, in enum order.
const std::vector<std::string>& access_names();
/// Every memory part's name, in enum order.
const std::vector<std::string>& mem_part_names();
/// The backend named `name` ("default", "cudnn", "flash2", ...); nullopt if none is.
std::optional<AttnBackend> attn_backend_of(const std::string& name);
/// Every backend's name, in enum order.
const std::vector<std::string>& attn_backend_names();
double dtype_bytes(DType d);

// Dimensions fit 32 bits (tokens, hidden sizes); products are taken in double.
struct GemmShape {
  int32_t m = 0, n = 0, k = 0;
};
// An implicit-GEMM convolution as cuDNN runs it: `positions` outputs of
// `cout` channels, each a dot product over `cin` channels times `taps`
// kernel taps, read from `in_positions` inputs; tf32: fp32 data on TF32
// tensor cores. With more than one tap, tensors held channels-first (as the
// VAE decoders hold them) are converted to channels-last and back around
// the kernel (ConvParams).
struct ConvShape {
  int32_t positions = 0, in_positions = 0, cin = 0, cout = 0, taps = 1;
  bool tf32 = false;
  bool channels_last = false;  // the tensors are held channels-last: no conversions
  bool operator==(const ConvShape&) const = default;
  /// Bytes of a data element as the kernel computes (TF32: fp32 data) given the op's element.
  [[nodiscard]] double element_bytes(double op_element) const { return tf32 ? 4.0 : op_element; }
  /// HBM bytes of the layout conversions around a channels-first kernel: its
  /// input and output each read and written once more.
  [[nodiscard]] double conversion_bytes(double element) const {
    return 2.0 * element * (static_cast<double>(cin) * in_positions + static_cast<double>(cout) * positions);
  }
};
struct AttentionShape {
  int32_t batch = 1, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  AttnBackend backend = AttnBackend::Default;
  /// Causal (PyTorch's is_causal): query i sees keys 0..i, the mask's
  /// diagonal at the top left; a fused kernel skips the masked blocks.
  bool causal = false;
  /// The query-key pairs computed: seq_q x seq_kv, or causal the unmasked ones.
  double pairs() const {
    const double q = seq_q, kv = seq_kv;
    if (!causal) return q * kv;
    const double tri = std::min(q, kv);  // rows 0..tri-1 see i + 1 keys; the rest every key
    return tri * (tri + 1) / 2 + (q - tri) * kv;
  }
  /// QK^T and PV: 4 * batch * heads * head_dim * the pairs computed.
  double flops() const { return 4.0 * (static_cast<double>(batch) * static_cast<double>(heads)) * pairs() * static_cast<double>(head_dim); }
};

// What a communicator runs, for NCCL's buffers (an alloc naming a group):
// all-to-alls and pairwise exchanges connect every other member peer to
// peer; a ring exchange (send to the next member, receive from the previous)
// its two neighbours; collectives (all-gather, reduce-scatter, all-reduce)
// NCCL's ring and tree channels.
inline constexpr uint8_t kNcclAllToAll = 1, kNcclRingExchange = 2, kNcclCollectives = 4;

struct Op {
  // One-byte fields first, so an Op packs tightly (a full workload holds ~10^6).
  OpKind kind = OpKind::Marker;
  CopyKind copy = CopyKind::H2D;        // memcpy
  HostMem host_mem = HostMem::Pinned;   // memcpy
  bool async = true;                    // memcpy
  bool realised = false;                // attention kernel run as GEMMs (osim::as_realised): clocked as a GEMM, not as SDPA
  DType dtype = DType::BF16;            // kernel, collective
  MemSpace space = MemSpace::Device;    // alloc
  MemPart part = MemPart::Weights;      // alloc
  Access access = Access::Elementwise;  // kernel of HBM bytes only
  CollKind coll = CollKind::AllToAll;   // collective
  CollAlgo algo = CollAlgo::Nccl;       // collective
  uint8_t nccl_runs = kNcclAllToAll;    // alloc with a group: what its communicator runs (kNccl* bits)
  // Kernel, memcpy, collective: the framework calls before it that launch
  // nothing (views, transposes, splits, reshapes), each costing the host
  // OverheadParams::framework_view_call (schedules of framework: pytorch).
  uint8_t views = 0;
  // Kernel: the framework ops it stands for (a preset's memory op for
  // several elementwise calls): the host issues each, a kernel launch and,
  // under a framework, its dispatch; the GPU runs them as this one kernel.
  // Alloc: 0 where the memory was taken when the model loaded, before the
  // run (`loaded: true`): no call of the run's.
  uint8_t launches = 1;
  int stream = -1;           // index into Schedule::streams
  int stream2 = -1;          // StreamWaitStream: the stream waited on
  int event = -1;            // index into Schedule::events
  int peer = -1;             // P2P copy destination rank; send/recv peer rank
  int group = -1;            // collective; alloc: NCCL's buffers for this communicator (part Comm)
  int channels = 0;          // collective; 0 = the model's default
  int sm_limit = 0;          // kernel; 0 = all SMs; -N = all but N (sm_margin: N SMs held back for others)
  int line = 0, column = 0;  // where the op was written (0: generated); see Schedule::location
  float efficiency = 0;      // kernel; 0 = the model's default for the class
  int32_t norm_row = 0;      // kernel of a norm: the elements of each row it normalises (0: long rows)
  // Kernel of measured duration: the nanoseconds of it during which 1, 2 and 3 copy engines were
  // busy where it was measured (an imported trace): the replay takes their slowdown out before
  // applying its own (InterferenceParams::gemm_slowdown_per_copy; see isolated_work).
  std::array<uint32_t, 3> beside_copies_ns{};
  Bytes bytes = 0;           // memcpy, alloc (0 with a group: sized by the run), collective
  Bytes host_span =
      0;             // memcpy h2d/d2h: the host memory its copies walk through, each the next slice (0 = its own bytes: one buffer, again and again)
  double flops = 0;  // kernel
  double hbm_bytes = 0;                     // kernel
  std::optional<Time> duration;             // kernel, host_work
  std::optional<GemmShape> gemm;            // kernel
  std::optional<AttentionShape> attention;  // kernel
  std::optional<ConvShape> conv;            // kernel of flops: the convolution they are (timed by ConvParams where calibrated)
  std::string label;                        // kernel name, marker text, alloc tag; "" = none
};

/// Markers "step N ..." on the compute stream start steps; this one ends the
/// last (without it, the last step ends with the run).
inline constexpr const char* kStepsEndMarker = "end of steps";

/// An op of a shared program may name its group or peer by role:
/// op.group (or op.peer) = role_ref(k) is the rank's Program::group_roles[k]
/// (peer_roles[k]). Ranks that differ only in whom they talk to (ring
/// neighbours, their own Ulysses or tensor-parallel group) so share one op list.
inline constexpr int role_ref(int k) { return -2 - k; }

/// A program generated as it runs, a part at a time (a generated workload's
/// forwards), so a run holds only the ops in flight.
class OpSource {
 public:
  virtual ~OpSource() = default;
  /// Appends the program's next ops; false once none are left.
  virtual bool next(std::vector<Op>& ops) = 0;
};

struct Program {
  int rank = 0;
  /// Immutable once built; ranks that run the same program share it (a
  /// generated workload holds one copy per CFG half instead of one per rank).
  std::shared_ptr<const std::vector<Op>> ops = std::make_shared<const std::vector<Op>>();
  /// Set: the program is generated as it runs (`ops` is empty; ranks sharing
  /// it share `ops` too). Each call starts the program afresh.
  std::function<std::unique_ptr<OpSource>()> source;
  /// This rank's groups and peers by role (see role_ref); -1: it has none.
  std::vector<int> group_roles, peer_roles;
  /// The op's group (index into Schedule::groups) or peer rank on this rank.
  [[nodiscard]] int group_of(const Op& op) const { return op.group <= -2 ? role(group_roles, op.group) : op.group; }
  [[nodiscard]] int peer_of(const Op& op) const { return op.peer <= -2 ? role(peer_roles, op.peer) : op.peer; }

 private:
  static int role(const std::vector<int>& roles, int ref) {
    const auto k = static_cast<size_t>(-2 - ref);
    assert(k < roles.size());
    return roles[k];
  }
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
// Who issues the program: CUDA/NCCL calls directly, or a framework whose
// dispatch costs host time per op (OverheadParams::framework_op_call).
enum class Framework : uint8_t { None, PyTorch };

struct RuntimeSettings {
  int device_max_connections = 8;  // CUDA_DEVICE_MAX_CONNECTIONS
  bool nccl_p2p_disable = false;   // NCCL_P2P_DISABLE
  // NCCL_NVLS_ENABLE=1: NCCL's model weighs NVLink SHARP (NVLS, NVLS-Tree;
  // gpu/nccl_tuning.hpp) where it prices a collective. Off by default, as
  // NCCL_NVLS_ENABLE=0 gives. Where it was set, for the refusal on a
  // topology without NVLS.
  bool nccl_nvls_enable = false;
  SourceLocation nccl_nvls_at;
  Framework framework = Framework::None;
  // Its memory-bound kernels are PyTorch's own (their rates by access kind,
  // MemoryParams) without its host costs: imported traces, whose host time
  // is measured. Set with framework: pytorch too.
  bool framework_kernels = false;
  // The host's CUDA call costs as measured where the program was recorded (an
  // imported trace: the median of each kind of call), and how long after the
  // GPU work a blocking call waited for ended it returned (wait_return). A
  // run given no calibration takes them in place of the model's
  // (OverheadParams' fields of the same names); unset ones, and every one
  // under a calibration, stay the calibration's.
  struct HostCalls {
    std::optional<Time> kernel_launch, memcpy_call, event_call, sync_call, collective_call, wait_return;
    using Field = std::optional<Time> HostCalls::*;
    // Every field with its key, in the order a schedule writes them.
    static constexpr std::array<std::pair<const char*, Field>, 6> kFields{{{"kernel_launch", &HostCalls::kernel_launch},
                                                                           {"memcpy_call", &HostCalls::memcpy_call},
                                                                           {"event_call", &HostCalls::event_call},
                                                                           {"sync_call", &HostCalls::sync_call},
                                                                           {"collective_call", &HostCalls::collective_call},
                                                                           {"wait_return", &HostCalls::wait_return}}};
    bool any() const {
      return std::any_of(kFields.begin(), kFields.end(), [this](const auto& f) { return (this->*f.second).has_value(); });
    }
  } host_calls;
  // The rate the recorded program's host copies ran at, by direction and host
  // memory (an imported trace: their bytes over their time, copies of 1 MiB
  // or more). `run --copy-rates-as-traced` takes them for the calibration's
  // copy-engine and pageable bandwidths.
  struct CopyRates {
    std::optional<Bandwidth> h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable;
    using Field = std::optional<Bandwidth> CopyRates::*;
    static constexpr std::array<std::pair<const char*, Field>, 4> kFields{{{"h2d_pinned", &CopyRates::h2d_pinned},
                                                                           {"d2h_pinned", &CopyRates::d2h_pinned},
                                                                           {"h2d_pageable", &CopyRates::h2d_pageable},
                                                                           {"d2h_pageable", &CopyRates::d2h_pageable}}};
    bool any() const {
      return std::any_of(kFields.begin(), kFields.end(), [this](const auto& f) { return (this->*f.second).has_value(); });
    }
  } copy_rates;
};

struct Schedule {
  std::string name;
  std::string file;
  std::string topology;           // optional path, relative to the schedule file
  std::vector<std::string> gpus;  // rank -> topology GPU name; empty = topology order
  RuntimeSettings runtime;
  std::vector<StreamDecl> streams;
  std::vector<std::string> events;
  std::vector<Group> groups;
  std::vector<Program> programs;  // one per rank, programs[r].rank == r
  int ranks() const { return static_cast<int>(programs.size()); }
  /// Whether its programs are generated as they run (Program::source): such
  /// a schedule runs without records and cannot be written out.
  bool generated_as_run() const { return !programs.empty() && programs[0].source != nullptr; }
  int find_stream(const std::string& n) const;
  int find_group(const std::string& n) const;
  int find_event(const std::string& n) const;
  /// file:line:col of an op written in a file; for a generated op, its rank and index.
  SourceLocation location(int rank, int index) const;
};

class MapReader;
/// Reads {device_max_connections, nccl_p2p_disable} from a schedule's
/// `settings:` or a workload's `runtime:` mapping.
RuntimeSettings read_runtime_settings(const MapReader& r);

/// Parses and checks; throws InputError with file:line.
/// `overrides`: "key=value" edits applied before parsing (--set, overlapsim sweep).
Schedule parse_schedule_file(const std::string& path, const std::vector<std::string>& overrides = {});
/// The same with each edit's own place (a sweep's line): errors in its value name it.
Schedule parse_schedule_file(const std::string& path, const std::vector<Override>& overrides);
Schedule parse_schedule_string(const std::string& yaml, const std::string& name);
/// Static checks (also run by the parsers); generators call it too.
void check_schedule(const Schedule& s);
/// Serialises to YAML that parse_schedule_string reads back to an equal schedule.
std::string to_yaml(const Schedule& s);

}  // namespace osim
