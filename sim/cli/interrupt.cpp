#include "cli/interrupt.hpp"

#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "io/out_folder.hpp"
#include "io/text_file.hpp"

namespace osim::cli {

namespace fs = std::filesystem;

namespace {

// What an interrupt cleans; the mutex is held by uninterrupted() steps and,
// for good, by the thread that takes the signal. Never destroyed: a signal
// may come while the process exits.
struct Claimed {
  std::mutex mutex;
  std::vector<fs::path> outputs, files;
  std::vector<std::string> lines;
};
Claimed& claimed() {
  static Claimed* c = new Claimed;
  return *c;
}

sigset_t taken_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    // One ignored at the start stays ignored (nohup, a script's background job).
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&s, sig);
  }
  return s;
}

// The signal thread: waits for one, cleans up, then dies of it.
void take(sigset_t signals) {
  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  Claimed& c = claimed();
  c.mutex.lock();  // held until the end: no commit starts after this
  int removed = 0;
  for (const fs::path& o : c.outputs) removed += remove_own_temporaries(o);
  for (const fs::path& f : c.files) {
    std::error_code ec;
    removed += fs::remove(f, ec) ? 1 : 0;
  }
  std::string say = fmt::format("interrupted ({}): stopped; {} temporary output{} removed, earlier outputs left as they were\n",
                                sig == SIGINT ? "SIGINT" : "SIGTERM", removed, removed == 1 ? "" : "s");
  for (const std::string& l : c.lines) say += l + "\n";
  const ssize_t ignored = ::write(STDERR_FILENO, say.data(), say.size());
  (void)ignored;
  // Dies of the signal (its default action), as the shell expects; 128 + it where that fails.
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
  std::_Exit(128 + sig);
}

}  // namespace

void handle_interrupts() {
  const sigset_t s = taken_signals();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  std::thread(take, s).detach();
}

void claim_output(const fs::path& out) {
  const std::lock_guard<std::mutex> l(claimed().mutex);
  claimed().outputs.push_back(out);
}

void claim_new_output(const fs::path& out, bool force) {
  refuse_overwrite(out, force);
  claim_output(out);
}

void remove_on_interrupt(const fs::path& p) {
  const std::lock_guard<std::mutex> l(claimed().mutex);
  claimed().files.push_back(p);
}

void on_interrupt_say(const std::string& line) {
  const std::lock_guard<std::mutex> l(claimed().mutex);
  claimed().lines.push_back(line);
}

void uninterrupted(const std::function<void()>& f) {
  const std::lock_guard<std::mutex> l(claimed().mutex);
  f();
}

}  // namespace osim::cli
