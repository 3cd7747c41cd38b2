#pragma once
// A ControllerObserver that counts the reconciles each controller reports, by result, as the
// controller_runtime_reconcile_total series would: for tests that check a controller reports
// to the metrics.
//
// Threads: the controllers' workers report; the test reads. A mutex guards the counts.

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "mka/controller/controller.h"

namespace mka::test {

class ReconcileCounts final : public controller::ControllerObserver {
 public:
  void reconciled(const std::string& controller, const std::string& result, double) override {
    std::lock_guard lock(mutex_);
    ++counts_[{controller, result}];
  }
  void queueDepth(const std::string&, std::size_t) override {}

  // Reconciles of `controller` that ended in `result` ("success", "error", ...).
  int count(const std::string& controller, const std::string& result) const {
    std::lock_guard lock(mutex_);
    const auto it = counts_.find({controller, result});
    return it == counts_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int> counts_;
};

}  // namespace mka::test
