#pragma once
// An EventRecorder that keeps "<type> <reason>: <message>" lines instead of writing Events, for
// reconciler tests that check what users would read with `kubectl describe`.

#include <mutex>
#include <string>
#include <vector>

#include "mka/controller/event_recorder.h"

namespace mka::test {

class RecordingEvents final : public controller::EventRecorder {
 public:
  using EventRecorder::EventRecorder;
  void record(const nlohmann::json&, std::string_view type, std::string_view reason,
              std::string_view message) override {
    std::lock_guard lock(mutex_);
    events_.push_back(std::string(type) + " " + std::string(reason) + ": " + std::string(message));
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> events_;
};

}  // namespace mka::test
