// Ctrl-C (SIGINT) or SIGTERM during a command leaves none of its outputs
// half-written. Each output is written into a temporary beside it and renamed
// into place at the end (io/text_file.hpp, io/out_folder.hpp); on one of these
// signals, a thread of the command line's own (the only one that takes them:
// they are blocked in every other thread) removes this process's temporaries
// of the outputs the command claimed and ends the process by the same signal,
// so that the shell sees it (exit status 130 or 143). The libraries know
// nothing of this: they neither handle signals nor exit.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace osim::cli {

/// Takes SIGINT and SIGTERM from here on (one not ignored when the process
/// started: a background job of a script keeps ignoring SIGINT). Called first
/// in main, before any other thread exists, so that every thread inherits
/// the blocked signals.
void handle_interrupts();

/// `out` (a file or an --out folder) is one of the command's outputs: an
/// interrupt removes this process's temporaries of it (never `out` itself:
/// an earlier run's output stays as it was).
void claim_output(const std::filesystem::path& out);
/// An output the command is about to write: refused where it exists without
/// `force` (refuse_overwrite), then claimed as above.
void claim_new_output(const std::filesystem::path& out, bool force);
/// A file the command made that an interrupt removes too (a lock file).
void remove_on_interrupt(const std::filesystem::path& p);
/// A line said on stderr when interrupted (what survives, how to go on).
void on_interrupt_say(const std::string& line);

/// Runs `f` whole before an interrupt cleans up: a step that moves outputs
/// into place (an output folder's commit) ends either not begun or done.
void uninterrupted(const std::function<void()>& f);

}  // namespace osim::cli
