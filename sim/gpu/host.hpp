// Each rank's host thread: it issues the program in order, paying each API
// call's overhead (OverheadParams), and blocks in syncs, blocking copies,
// host work and launches into a full hardware queue until what it waits for
// is done.
#pragma once

#include <string>
#include <vector>

#include "gpu/exec_context.hpp"

namespace osim::exec {

class Streams;
class Memory;
class Collectives;

class Host {
 public:
  Host(ExecContext& x, Streams& streams, Memory& memory, const Collectives& colls);
  /// Starts every rank's thread at time 0.
  void start();
  /// Rank r's thread resumes if what it blocked on is done.
  void wake(int r);
  [[nodiscard]] bool done(int r) const { return ranks_[static_cast<size_t>(r)].state == Rank::Done; }
  /// Where a blocked thread waits: its op and why (deadlock reports).
  [[nodiscard]] int pc(int r) const { return ranks_[static_cast<size_t>(r)].pc; }
  [[nodiscard]] std::string waiting_in(int r) const;
  [[nodiscard]] Time end(int r) const { return ranks_[static_cast<size_t>(r)].host_end; }

 private:
  struct Rank {
    int pc = 0;
    bool paid = false, effect_done = false;
    bool waited = false;  // the op at pc blocked in a wait for the GPU (a synchronize, a blocking copy)
    enum { Ready, Busy, Blocked, Done } state = Ready;
    // What a blocked thread waits for (the op at pc says why).
    struct Wait {
      enum Kind : uint8_t { None, Gop, Stream, Device, Queue } kind = None;
      int gop = -1;  // Gop: that op done
      int stream = -1,
          count = 0;  // Stream: that many ops of the stream done; Queue: the stream's hardware queue has started ops up to its entry `count`
      std::vector<int> counts;  // Device: that many ops of every stream done
    } until;
    Time busy_until;
    Time host_end;
  };
  // The host time before the op's effect: its views' calls, then its own.
  Time overhead(int r, const Op& op) const;
  Time call_overhead(int r, const Op& op) const;
  int64_t partners(int r, const Op& op) const;  // a collective's group size - 1
  // Whether the host blocking in `op` is a wait for the GPU that it comes
  // back from (OverheadParams::wait_return, a framework's
  // framework_wait_return): not a full launch queue, nor an allocation.
  bool waits_for_gpu(const Rank& H, const Op& op) const;
  // A framework's pairwise all-to-all whose call the calibration measured:
  // the host time of its rounds, which it spends while the GPU runs the call
  // (Collectives::framework_pairwise_table); zero for any other op.
  Time rounds_while_running(int r, const Op& op) const;
  // Whether rank r's program has an op at place `id`: generates the next
  // part of a program generated as it runs when the host reaches its end,
  // after dropping what all its ranks are past.
  bool has_op(int r, int id) { return id < x_.ranks[static_cast<size_t>(r)].program->end() || extend(r, id); }
  bool extend(int r, int id);
  static void step_event(void* self, uint64_t r) { static_cast<Host*>(self)->step(static_cast<int>(r)); }
  void step(int r);
  bool satisfied(int r) const;
  void block_on_stream(Rank& H, int stream, int count);
  // What the op does when the host issues it.
  void effect(int r, const Op& op);

  ExecContext& x_;
  Streams& streams_;
  Memory& memory_;
  const Collectives& colls_;
  std::vector<Rank> ranks_;
};

}  // namespace osim::exec
