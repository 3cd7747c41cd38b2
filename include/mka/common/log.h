#pragma once
// Named loggers for modules ("net", "file-watcher", ...): clones of the default logger, so they
// write wherever and however observability::setupLogging() configured ("[net]" in the text
// format, "logger":"net" in JSON).

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace mka {

// Returns the logger registered under `name`, cloning the default logger on first use.
// Safe to call from any thread.
std::shared_ptr<spdlog::logger> namedLogger(const std::string& name);

}  // namespace mka
