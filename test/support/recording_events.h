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
  void record(const nlohmann::json& object, std::string_view type, std::string_view reason,
              std::string_view message) override {
    std::lock_guard lock(mutex_);
    events_.push_back(std::string(type) + " " + std::string(reason) + ": " + std::string(message));
    kinds_.push_back(object.value("kind", ""));
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // The kind of the object each event is about, in the same order.
  std::vector<std::string> kinds() const {
    std::lock_guard lock(mutex_);
    return kinds_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> events_;
  std::vector<std::string> kinds_;
};

}  // namespace mka::test
