#pragma once
// `multikueue-adapter explain KIND/NAME [-n NS] [-o json]`: where a job of a configured kind is
// and why (job_report.h). It prints the facts it read, on the manager and on the worker the job
// was dispatched to (each admission check's state and message, the nominated and chosen
// workers, the remote Workload's and job's status, the last Events of each), then ONE sentence
// that answers "why", starting with the state: `Running on worker2 for 3m12s (remote phase
// Running)`. `-o json` prints the same as one object (docs/troubleshooting.md has its schema).
// Exit codes: 0 when the job was found, 1 when it is not on the manager or the manager cannot
// be read, 2 for a usage error.
//
// Threads: the caller's.

#include <chrono>
#include <filesystem>
#include <ostream>
#include <string>

#include "mka/app/command_setup.h"
#include "mka/common/clock.h"

namespace mka::app {

struct ExplainCommandOptions {
  std::string target;  // KIND/NAME, or KIND NAME as two words
  std::string name;    // the second word, when KIND and NAME came apart
  ManagerAccess manager;
  std::string namespace_;  // "" = the context's namespace, else default
  std::filesystem::path configFile;
  std::string output;  // "" (text) or "json"
  std::chrono::milliseconds timeout{std::chrono::seconds{10}};
  const Clock* clock = nullptr;  // null: the system clock (ages and durations in the sentence)
};

int explainCommand(const ExplainCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace mka::app
