#pragma once
// A process a test runs: a program with its arguments, stdout and stderr into files, SIGKILLed
// and reaped if the test ends while it still runs.
//
// Threads: the test's.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace mka::test {

class ChildProcess {
 public:
  // `out` and `err` may be one file: both streams then go there. Standard input is `in` when
  // given, else the test's. The environment is the test's.
  ChildProcess(const std::string& program, const std::vector<std::string>& args, const std::filesystem::path& out,
               const std::filesystem::path& err, const std::filesystem::path& in = {}) {
    std::vector<std::string> argv = {program};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargs;
    for (auto& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!in.empty()) posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err == out) {
      posix_spawn_file_actions_adddup2(&actions, 1, 2);
    } else {
      posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    if (posix_spawn(&pid_, program.c_str(), &actions, nullptr, cargs.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ChildProcess() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  void signal(int number) const {
    if (pid_ > 0) ::kill(pid_, number);
  }
  // Its wait status once it has exited; nullopt while it runs.
  std::optional<int> waitStatus() {
    int status = 0;
    if (!status_ && pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_;
  }
  // Its exit code once it has exited; -1 when a signal ended it.
  std::optional<int> exitCode() {
    const auto status = waitStatus();
    if (!status) return std::nullopt;
    return WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace mka::test
