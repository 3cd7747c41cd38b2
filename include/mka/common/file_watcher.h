#pragma once
// Watches a few files for content changes, including the symlink swaps kubelet uses to update
// Secret and ConfigMap volumes (the "..data" link is replaced, so the watched path's inode
// never changes but its target does). Fires `onChange` once per change batch.
//
// Threads: owns one background thread that runs the callback; start()/stop() from the owner.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

namespace mka {

class FileWatcher {
 public:
  struct Options {
    // Upper bound on how late a change is noticed when inotify misses it (e.g. on
    // network file systems); inotify usually reports within milliseconds.
    std::chrono::milliseconds pollInterval{1000};
    // Changes that arrive within this window are reported once (a cert and key written
    // one after the other give one callback).
    std::chrono::milliseconds debounce{100};
    // false: poll only (file systems without inotify; tests of the poll safety net).
    bool useInotify = true;
  };

  FileWatcher(std::vector<std::filesystem::path> files, std::function<void()> onChange);
  FileWatcher(std::vector<std::filesystem::path> files, std::function<void()> onChange, Options options);
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // start() takes the files' current state as the baseline, so any change made after it
  // returns is reported. Both are idempotent; stop() returns promptly (it does not wait for
  // a poll interval), after the callback in progress, if any, has returned.
  void start();
  void stop();

  // How many times the files were checked so far (poll ticks and inotify wake-ups). Lets tests
  // await "a check happened and found nothing" instead of sleeping.
  std::uint64_t checks() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka
