#pragma once
// Records what a named logger writes (at debug and above) while it lives, for tests that check
// which records a component writes and at which level.

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/sinks/ringbuffer_sink.h>

#include "mka/common/log.h"

namespace mka::test {

class LogCapture {
 public:
  explicit LogCapture(const std::string& name)
      : logger_(namedLogger(name)), sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    sink_->set_formatter(log::makeFormatter(log::Format::Text));
    level_ = logger_->level();
    logger_->sinks().push_back(sink_);
    logger_->set_level(spdlog::level::debug);
  }
  ~LogCapture() {
    logger_->set_level(level_);
    auto& sinks = logger_->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // The records written so far that contain `text`, formatted as logfmt lines.
  std::vector<std::string> linesWith(std::string_view text) const {
    std::vector<std::string> out;
    for (auto& line : sink_->last_formatted())
      if (line.find(text) != std::string::npos) out.push_back(line);
    return out;
  }

 private:
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  spdlog::level::level_enum level_;
};

}  // namespace mka::test
