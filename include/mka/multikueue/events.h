#pragma once
// Kubernetes Events (core/v1) about manager objects, as client-go's event recorder writes
// them, for what users read with `kubectl describe`: best effort, a failed write is logged and
// never fails the reconcile that emitted it. As client-go's EventCorrelator does, an event
// identical to one already written (same object, type, reason and message) patches that
// Event's count and lastTimestamp instead of adding another, so a reconcile that repeats a
// warning on every pass does not flood the namespace; the memory of what was written is
// bounded (kMaxRemembered, then it starts over).
//
// Threads: record() from any thread; each call writes on the caller's thread; the memory of
// written events is guarded by a mutex held only around its lookups.

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/kube/client.h"

namespace mka::multikueue {

class EventRecorder {
 public:
  // `component` is the event source ("kueue-workload-controller", "multikueue-cluster").
  EventRecorder(kube::Client& client, const Clock& clock, std::string component);
  virtual ~EventRecorder() = default;
  // type: "Normal" | "Warning". The event lands in the object's namespace ("default" for
  // cluster-scoped objects, as kube-apiserver does).
  virtual void record(const nlohmann::json& object, std::string_view type, std::string_view reason,
                      std::string_view message);

  static constexpr std::size_t kMaxRemembered = 4096;  // client-go's aggregation cache size

 private:
  struct Written {
    std::string ns, name;
    long count = 1;
  };

  kube::Client& client_;
  const Clock& clock_;
  std::string component_;
  std::mutex mutex_;
  std::unordered_map<std::string, Written> written_;  // by object uid, type, reason and message
};

}  // namespace mka::multikueue
