
#include "mka/common/log.h"
#include "mka/config/loader.h"
#include "mka/config/store.h"

namespace mka::config {
namespace {

std::string_view sourceName(Configuration::Source source) {
  switch (source) {
    case Configuration::Source::AdapterConfiguration: return "AdapterConfiguration";
    case Configuration::Source::KueueConfiguration: return "KueueConfiguration";
    case Configuration::Source::Defaults: break;
  }
  return "Defaults";
}

}  // namespace

ConfigReloader::ConfigReloader(std::filesystem::path file, ConfigStore& store, ResultCallback onResult,
                               FileWatcher::Options options, Adjust adjust, Check check)
    : file_(std::move(file)),
      store_(store),
      onResult_(std::move(onResult)),
      options_(options),
      adjust_(std::move(adjust)),
      check_(std::move(check)) {}

ConfigReloader::~ConfigReloader() { stop(); }

void ConfigReloader::start() {
  if (watcher_) return;
  watcher_ = std::make_unique<FileWatcher>(
      std::vector<std::filesystem::path>{file_}, [this] { reloadNow(); }, options_);
  watcher_->start();
}

void ConfigReloader::stop() {
  if (!watcher_) return;
  watcher_->stop();
  watcher_.reset();
}

FieldErrors ConfigReloader::reloadNow() {
  std::lock_guard reloadLock(reloadMutex_);
  auto result = loadConfigurationFile(file_);
  if (result.ok()) {
    if (adjust_) adjust_(*result.config);
    if (check_) {
      result.errors = check_(*result.config);
      if (!result.errors.empty()) result.config.reset();
    }
  }
  // Record the outcome before publishing, so whoever sees the new configuration also sees
  // lastReloadOk() == true.
  {
    std::lock_guard lock(mutex_);
    lastOk_ = result.ok();
  }
  if (result.ok()) {
    const auto frameworks = result.config->multiKueue.externalFrameworks.size();
    const auto source = result.config->source;
    store_.set(std::move(*result.config));
    log::info("config reloaded", {{"file", file_.string()},
                                  {"source", sourceName(source)},
                                  {"frameworks", frameworks},
                                  {"generation", store_.generation()}});
  } else {
    // The last good configuration stays in force; each problem gets its own line to act on.
    log::error(
        "config reload refused",
        {{"file", file_.string()}, {"errors", result.errors.size()}, {"keepingGeneration", store_.generation()}});
    for (const auto& e : result.errors) log::error("config error", {{"file", file_.string()}, {"error", e.toString()}});
  }
  if (onResult_) onResult_(result.errors);
  return result.errors;
}

bool ConfigReloader::lastReloadOk() const {
  std::lock_guard lock(mutex_);
  return lastOk_;
}

}  // namespace mka::config
