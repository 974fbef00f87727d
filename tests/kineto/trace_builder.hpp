// A Kineto trace built event by event for the importer's tests, and the
// error an import of some files gives.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "kineto/import.hpp"

namespace osim::test {

using json = nlohmann::json;
namespace fs = std::filesystem;

// A trace under construction: host calls on one thread, GPU activities, syncs.
struct TraceBuilder {
  json events = json::array();
  json doc = json::object();
  int64_t corr = 0;
  // A CUDA call at `ts` (µs) lasting `dur`; returns its correlation id.
  int64_t call(const std::string& name, double ts, double dur, int64_t ext = -1) {
    json args = {{"correlation", ++corr}};
    if (ext >= 0) args["External id"] = ext;
    events.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", name}, {"pid", 100}, {"tid", 100}, {"ts", ts}, {"dur", dur}, {"args", args}});
    return corr;
  }
  void gpu(const std::string& cat, const std::string& name, int stream, double ts, double dur, int64_t c, json extra = json::object()) {
    json args = {{"correlation", c}, {"stream", stream}, {"device", 0}};
    args.update(extra);
    events.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 0}, {"tid", stream}, {"ts", ts}, {"dur", dur}, {"args", args}});
  }
  void sync(const std::string& kind, int64_t c, int stream, int64_t event_id = -1) {
    events.push_back(
        {{"ph", "X"},
         {"cat", "cuda_sync"},
         {"name", kind},
         {"pid", 0},
         {"tid", 1},
         {"ts", 0.0},
         {"dur", 0.0},
         {"args", {{"correlation", c}, {"stream", stream}, {"wait_on_cuda_event_id", event_id}, {"wait_on_cuda_event_record_corr_id", -1}}}});
  }
  void cpu_op(const std::string& name, int64_t ext, json dims, json types) {
    events.push_back({{"ph", "X"},
                      {"cat", "cpu_op"},
                      {"name", name},
                      {"pid", 100},
                      {"tid", 100},
                      {"ts", 0.0},
                      {"dur", 0.0},
                      {"args", {{"External id", ext}, {"Input Dims", dims}, {"Input type", types}}}});
  }
  void range(const std::string& name, double ts, double dur) {
    events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", name}, {"pid", 100}, {"tid", 100}, {"ts", ts}, {"dur", dur}});
  }
  std::string write(const std::string& file) {
    json d = doc;
    d["traceEvents"] = events;
    const fs::path p = fs::temp_directory_path() / ("osim-kineto-" + file);
    std::ofstream(p) << d.dump(1);
    return p.string();
  }
};

inline std::string write_text(const std::string& file, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("osim-kineto-" + file);
  std::ofstream(p) << text;
  return p.string();
}

inline std::string error_of(const std::vector<std::string>& paths) {
  try {
    kineto::import_traces(paths);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace osim::test
