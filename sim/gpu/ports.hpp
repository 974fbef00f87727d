// The ports the executor's components call each other through (internal to
// sim/gpu; docs/execution-model.md, "Components"). A component is handed, in
// its constructor, the ports it calls and no others; each port is named by
// what it offers. Calls go down the stack Host -> Streams -> Collectives ->
// Copies, ClosedForms -> Compute -> Memory, FabricUse; what goes up (an op
// started or ended, a thread may resume, a clock changed, a closed form's
// flows come back) goes through a port declared here, which the coordinator
// (executor.cpp) implements by forwarding to the component above. No
// component calls one above it any other way: the calls form no cycle.
#pragma once

#include "schedule/schedule.hpp"

namespace osim::exec {

/// Offered by Streams to the engines that run its ops (Compute, Copies,
/// Collectives): an op they run starts, or ends.
class OpCompletion {
 public:
  /// Op `id` of rank r starts now (a copy when its engine takes it, a
  /// collective when its rank reaches it).
  virtual void op_started(int r, int id, const Op& op) = 0;
  /// Op `id` of rank r finished: its stream moves on.
  virtual void op_done(int r, int id) = 0;

 protected:
  ~OpCompletion() = default;
};

/// Offered by Host to Streams: rank r's streams moved on; its thread
/// resumes if what it blocked on is done.
class HostWake {
 public:
  virtual void wake(int r) = 0;

 protected:
  ~HostWake() = default;
};

}  // namespace osim::exec
