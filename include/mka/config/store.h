#pragma once
// The configuration in force, published as immutable snapshots, and the hot reload that swaps
// them when the file changes (ConfigMap volumes change by symlink swap).
//
// Threads: ConfigStore is read by any thread (each read takes a snapshot); it is written only
// by the ConfigReloader's watcher thread (or by the owner before start()).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>

#include "mka/common/errors.h"
#include "mka/common/file_watcher.h"
#include "mka/config/configuration.h"

namespace mka::config {

class ConfigStore {
 public:
  explicit ConfigStore(Configuration initial);
  std::shared_ptr<const Configuration> get() const;
  void set(Configuration next);
  // Incremented on every set(); lets readers notice a reload cheaply.
  std::uint64_t generation() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Configuration> current_;
  std::uint64_t generation_ = 0;
};

// Reloads `file` into `store` when it changes. A new file that fails validation is refused:
// the last good configuration stays in force and `onResult` reports the errors.
class ConfigReloader {
 public:
  // Called after every reload attempt with the errors (empty on success).
  using ResultCallback = std::function<void(const FieldErrors& errors)>;
  // Applied to every newly loaded configuration before it is published, e.g. to re-apply
  // command-line overrides and keep settings that only a restart can change.
  using Adjust = std::function<void(Configuration& next)>;
  // Checks of the caller's that a file alone cannot answer (e.g. what the cluster serves), run on
  // the adjusted configuration; any error refuses the reload like a file error.
  using Check = std::function<FieldErrors(const Configuration& next)>;

  ConfigReloader(std::filesystem::path file, ConfigStore& store, ResultCallback onResult,
                 FileWatcher::Options options = {}, Adjust adjust = {}, Check check = {});
  ~ConfigReloader();
  ConfigReloader(const ConfigReloader&) = delete;
  ConfigReloader& operator=(const ConfigReloader&) = delete;
  // Watches the file; a reload runs on the watcher's thread. start() after stop() is allowed.
  void start();
  void stop();
  // Re-reads the file now (the watcher calls this); returns the errors, empty on success.
  FieldErrors reloadNow();
  // false while the newest file on disk is invalid (the last good config is still in force).
  bool lastReloadOk() const;

 private:
  std::filesystem::path file_;
  ConfigStore& store_;
  ResultCallback onResult_;
  FileWatcher::Options options_;
  Adjust adjust_;
  Check check_;
  std::unique_ptr<FileWatcher> watcher_;
  std::mutex reloadMutex_;  // one reload at a time (watcher thread and direct callers)
  mutable std::mutex mutex_;
  bool lastOk_ = true;
};

}  // namespace mka::config
