#pragma once
// Kubernetes Events (core/v1) about manager objects, as client-go's event recorder writes
// them, for what users read with `kubectl describe`: best effort, a failed write is logged and
// never fails the reconcile that emitted it.
//
// Threads: record() from any thread; each call writes on the caller's thread.

#include <string>
#include <string_view>

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

 private:
  kube::Client& client_;
  const Clock& clock_;
  std::string component_;
};

}  // namespace mka::multikueue
