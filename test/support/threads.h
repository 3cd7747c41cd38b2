#pragma once
// The names of this process's threads (/proc/self/task/*/comm), for tests that check which
// threads a component runs: its threads name themselves once they run.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mka::test {

inline std::vector<std::string> threadNames() {
  std::vector<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  return names;
}

}  // namespace mka::test
