#pragma once
// A process's CPU time (in all or by thread name) and peak RSS, and a free loopback port to start
// one on: what the benchmarks that run a server in a process of its own (the adapter, the Go peer)
// measure it by, and how dispatch_bench splits a process's CPU among its components.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace mka::bench {

struct ProcessStats {
  double cpuSeconds = 0;  // user + system so far (/proc/<pid>/stat); 0 when unreadable
  double peakRssMiB = 0;  // VmHWM (/proc/<pid>/status)
  double rssMiB = 0;      // VmRSS (/proc/<pid>/status): now
};

// utime + stime from a /proc/.../stat file, in seconds; 0 when unreadable. The command name may
// hold spaces and ends with ')'; utime and stime are fields 14 and 15.
inline double cpuSecondsOfStat(const std::string& path) {
  std::ifstream stat(path);
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  unsigned long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoul(field);
    if (i == 15) stime = std::stoul(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

inline ProcessStats statsOf(pid_t pid) {
  ProcessStats stats;
  stats.cpuSeconds = cpuSecondsOfStat("/proc/" + std::to_string(pid) + "/stat");
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) stats.peakRssMiB = std::stod(line.substr(6)) / 1024.0;
    if (line.rfind("VmRSS:", 0) == 0) stats.rssMiB = std::stod(line.substr(6)) / 1024.0;
  }
  return stats;
}

// The CPU seconds of a process's live threads, summed by thread name (as nameThisThread set it,
// cut to 15 characters): what one component's threads spent. Threads that have exited are gone
// from /proc, so a component whose threads come and go is undercounted.
inline std::map<std::string, double> threadCpuByName(pid_t pid) {
  std::map<std::string, double> cpu;
  std::error_code ec;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream commFile(task.path() / "comm");
    std::string name;
    if (!std::getline(commFile, name)) continue;  // the thread has just exited
    cpu[name] += cpuSecondsOfStat((task.path() / "stat").string());
  }
  return cpu;
}

// A loopback port free right now, for a server in another process to listen on.
inline int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot find a free loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace mka::bench
