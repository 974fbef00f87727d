// overlapsim sweep, overlapsim merge: every point of a grid over workload,
// schedule, topology and calibration keys, on every core, into a CSV; the
// shards of a split sweep joined.
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cli/common.hpp"
#include "core/errors.hpp"
#include "io/file_lock.hpp"
#include "sweep/sweep.hpp"
#include "workload/dit.hpp"

namespace osim::cli {

namespace {

// "i/N" (1-based) -> (i-1, N).
std::pair<int, int> parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  int i = 0, n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument(text);
    size_t u1 = 0, u2 = 0;
    i = std::stoi(text.substr(0, slash), &u1);
    n = std::stoi(text.substr(slash + 1), &u2);
    if (u1 != slash || u2 != text.size() - slash - 1) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    n = 0;
  }
  if (n < 1 || i < 1 || i > n)
    throw InputError(SourceLocation{"--shard " + text, 0, 0},
                     "expected i/N with 1 <= i <= N, e.g. --shard 3/8 (Slurm: --shard $SLURM_ARRAY_TASK_ID/8 with --array=1-8)");
  return {i - 1, n};
}

// A progress bar with ETA on stderr, redrawn at most 10 times a second.
class ProgressBar {
 public:
  explicit ProgressBar(bool on) : on_(on), start_(std::chrono::steady_clock::now()) {}
  void update(size_t done, size_t total) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double el = std::chrono::duration<double>(now - start_).count();
    const double eta = done > 0 ? el / static_cast<double>(done) * static_cast<double>(total - done) : 0;
    const int width = 30, fill = total ? static_cast<int>(width * done / total) : width;
    std::cerr << fmt::format("\r[{}{}] {}/{} {:3d}%  {:.0f} s elapsed, ETA {:.0f} s ", std::string(fill, '#'), std::string(width - fill, '.'), done,
                             total, total ? static_cast<int>(100 * done / total) : 100, el, eta)
              << std::flush;
    if (done == total) std::cerr << "\n";
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_, last_;
};

int sweep_command(const std::string& path, std::string out, bool force, bool resume, int threads, const std::string& shard, bool progress,
                  bool no_progress, double tolerance, size_t max_points) {
  const SweepSpec spec = parse_sweep_file(path);
#if defined(__GLIBC__)
  // Each point allocates and frees ~100 MB: keep freed memory in the heap
  // for the next point instead of returning it to the OS and faulting it in
  // again (about a quarter of a point's time otherwise).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  SweepOptions o;
  o.threads = threads;
  if (!shard.empty()) std::tie(o.shard, o.shards) = parse_shard(shard);
  o.max_points = max_points;
  check_sweep_points(spec, o);  // before anything is enumerated or written
  if (out.empty()) out = o.shards > 1 ? fmt::format("{}.shard{}of{}.csv", spec.name, o.shard + 1, o.shards) : spec.name + ".csv";
  claim_new_output(out, force);
  if (const fs::path parent = fs::path(out).parent_path(); !parent.empty()) fs::create_directories(parent);
  // One sweep at a time on an output: a second is refused, not taken for an interrupted one.
  const FileLock lock(out, "another overlapsim sweep is writing this CSV");
  remove_on_interrupt(out + ".lock");
  // Finished points land in OUT.journal as they finish; an interrupted sweep
  // goes on from there with --resume. The journal goes once the CSV is written.
  const std::string journal_path = out + ".journal";
  const bool journal_exists = fs::exists(journal_path);
  if (journal_exists && !resume && !force)
    throw InputError(SourceLocation{journal_path, 0, 0},
                     "an interrupted run of this sweep left its finished points here: pass --resume to go on from them, or --force to start over");
  if (resume && journal_exists) {
    o.finished = SweepJournal::read(journal_path, spec, o);
    std::cout << fmt::format("resuming {}: {} points finished already\n", journal_path, o.finished.size());
  }
  std::optional<SweepJournal> journal;
  journal.emplace(journal_path, spec, o, resume && journal_exists);
  on_interrupt_say(fmt::format("the finished points are kept in {}: run the same command with --resume to go on from them", journal_path));
  ProgressBar bar(!no_progress && (progress || isatty(STDERR_FILENO)));
  o.progress = [&bar](size_t done, size_t total) { bar.update(done, total); };
  o.on_row = [&journal](const std::vector<std::string>& row) { journal->add(row); };
  const auto t0 = std::chrono::steady_clock::now();
  const SweepTable t = run_sweep(spec, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_file(out, to_csv(t));
  journal.reset();
  fs::remove(journal_path);
  std::cout << fmt::format("sweep {}: {} points{} on {} in {:.2f} s; wrote {}\n", spec.name, t.rows.size(),
                           o.shards > 1 ? fmt::format(" (shard {}/{} of {})", o.shard + 1, o.shards, spec.size()) : "", spec.base, secs, out);
  if (o.shards > 1) std::cout << "(the summary covers this shard's points; overlapsim merge joins the shards)\n";
  std::cout << sweep_summary(t, tolerance / 100);
  // Which calibration the points ran with: a sweep key, the sweep's, the base workload's, or none.
  bool varies = false;
  for (const auto& block : spec.blocks)
    for (const SweepAxis& a : block) varies = varies || a.key == "calibration";
  for (const auto& [k, v] : spec.set) varies = varies || k == "calibration";
  if (varies) {
    std::cout << "calibration: the sweep's 'calibration' key, point by point (its CSV column)\n";
  } else {
    std::string cal = spec.calibration;
    if (cal.empty() && !spec.schedule_base) cal = parse_workload_file(spec.base).calibration;
    if (cal.empty())
      std::cout << "calibration: the measured defaults of each point's GPUs (configs/calibrations/, built in), the datasheet defaults "
                   "where their family was not measured; a sweep's 'calibration:' (a file, or none) sets it\n";
    else
      std::cout << calibration_note(cal);
  }
  // The CSV holds every row; the exit status says whether every point ran.
  if (const size_t failed = failed_points(t); failed > 0 && failed == t.rows.size()) {
    // Every point: most likely one cause (a value of the base or the sweep's own) that the first shows.
    const std::vector<std::string>& first = t.rows.front();
    const std::vector<std::string> params = t.parameters();
    std::vector<std::string> keys;
    for (size_t k = 0; k < params.size() && k + 1 < first.size(); ++k) keys.push_back(fmt::format("{}={}", params[k], first[k + 1]));
    std::cerr << fmt::format("all {} points failed. The first, point {}{}: {}\n(each row's 'error' column says why; exit 1)\n", t.rows.size(),
                             first[0], keys.empty() ? "" : fmt::format(" ({})", fmt::join(keys, ", ")),
                             first[static_cast<size_t>(t.column("error"))]);
    return 1;
  } else if (failed > 0) {
    std::cerr << fmt::format("{} of {} points failed: their rows' 'error' column says why (exit 1)\n", failed, t.rows.size());
    return 1;
  }
  return 0;
}

int merge_command(const std::vector<std::string>& inputs, const std::string& out, bool force, const std::string& sweep, double tolerance) {
  std::vector<std::pair<std::string, SweepTable>> shards;
  for (const auto& in : inputs) shards.emplace_back(in, read_csv_file(in));
  std::optional<size_t> expected;
  std::string identity;
  if (!sweep.empty()) {
    const SweepSpec spec = parse_sweep_file(sweep);
    expected = spec.size();
    identity = sweep_identity(spec);
  }
  const SweepTable t = merge_sweep_tables(shards, expected, identity);
  claim_new_output(out, force);
  write_file(out, to_csv(t));
  std::cout << fmt::format("merged {} shard files: {} points; wrote {}\n", inputs.size(), t.rows.size(), out);
  std::cout << sweep_summary(t, tolerance / 100);
  return 0;
}

struct SweepOptions {
  std::string sweep, out, shard;
  bool force = false, resume = false, progress = false, no_progress = false;
  int threads = 0;
  size_t max_points = kDefaultMaxSweepPoints;
  double tolerance = 1.0;
};
struct MergeOptions {
  std::vector<std::string> inputs;
  std::string out, sweep;
  bool force = false;
  double tolerance = 1.0;
};

}  // namespace

Command add_sweep(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  auto* c = app.add_subcommand("sweep",
                               "Simulate every point of a sweep (grid / list over workload, topology, schedule keys); write a CSV; print the best "
                               "points and a recommendation");
  c->add_option("sweep", o->sweep, "sweep YAML (docs/formats/sweep.md)")->required();
  c->add_option("-o,--out", o->out, "CSV to write (default: NAME.csv, or NAME.shardIofN.csv)");
  c->add_flag("--force", o->force, "overwrite an existing CSV (and start over from an interrupted run's journal)");
  c->add_flag("--resume", o->resume, "go on from an interrupted run: points in OUT.journal are not run again");
  c->add_option("-j,--threads", o->threads, "worker threads (default: every core)")->check(CLI::NonNegativeNumber);
  c->add_option("--shard", o->shard, "run shard i of N (1-based, every N-th point), e.g. 3/8; join with overlapsim merge");
  c->add_flag("--progress", o->progress, "draw the progress bar even when stderr is not a terminal");
  c->add_flag("--no-progress", o->no_progress, "no progress bar");
  c->add_option("--tolerance", o->tolerance, "recommend the least-VRAM point within this many percent of the best (default 1)")
      ->check(finite_percent());
  c->add_option("--max-points", o->max_points,
                fmt::format("run at most this many points (default {}): a larger sweep is refused before it starts", kDefaultMaxSweepPoints))
      ->check(CLI::PositiveNumber);
  return {c, [o] {
            return sweep_command(o->sweep, o->out, o->force, o->resume, o->threads, o->shard, o->progress, o->no_progress, o->tolerance,
                                 o->max_points);
          }};
}

Command add_merge(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  auto* c = app.add_subcommand("merge", "Join the CSVs of a sharded sweep into the CSV an unsharded run writes; print the summary");
  c->add_option("shards", o->inputs, "the shards' CSV files (overlapsim sweep --shard i/N)")->required();
  c->add_option("-o,--out", o->out, "merged CSV to write")->required();
  c->add_option("--sweep", o->sweep, "the sweep file: also checks that no shard is missing at the end");
  c->add_flag("--force", o->force, "overwrite an existing CSV");
  c->add_option("--tolerance", o->tolerance, "as for sweep")->check(finite_percent());
  return {c, [o] { return merge_command(o->inputs, o->out, o->force, o->sweep, o->tolerance); }};
}

}  // namespace osim::cli
