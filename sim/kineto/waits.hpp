// How an imported trace's stream waits and event synchronizes bind their
// event records (docs/import-trace.md): by the timeline where it decides, by
// the program's idioms where it does not. Internal to the importer.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "kineto/import.hpp"
#include "kineto/trace.hpp"

namespace osim::kineto {

// How late a stream may go on after it could have (launch latency, clock
// skew between host and GPU timestamps) and its wait still count as not binding.
constexpr int64_t kSlackNs = 10'000;
// How long after a record's work ended a stream that waited on it goes on.
constexpr int64_t kExplainNs = 30'000;

// One event record: the stream it is on and when the work before it ended.
struct RecordInfo {
  size_t call = 0;
  int stream = -1;
  int64_t covered_end = trace::kNone;
  int64_t event_id = trace::kNone;  // the CUDA event, once a wait names it
  bool after_copy = false;          // the thread's last work before it was a copy: it marks that copy's end
  int index = -1;                   // the schedule's event
};

// A wait or event synchronize bound: the record it waits on, and for a wait the stream that waits.
struct Binding {
  size_t record = 0;
  int waiting = -1;
};

/// For every wait and event synchronize (by call index): the record it binds.
/// A wait the timeline decides (the waiting stream went on late, as a record's
/// work ended) binds the latest record on another stream whose work had ended
/// by then; one it does not decide binds by the program's idioms (waits.cpp).
std::map<size_t, Binding> pair_waits(const trace::RankTrace& t, std::vector<RecordInfo>& records, int default_stream, ImportSummary& sum);

}  // namespace osim::kineto
