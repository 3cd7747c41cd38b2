#pragma once
// The placement check's state on each Workload. Kueue admits a Workload only when every check
// of its ClusterQueue is Ready, and Kueue's MultiKueue (since kueue#9866, as our dispatcher)
// nominates no worker while another check is not Ready; OCM's kueue-addon never writes Workloads
// (its ClusterRole has no workloads rule), so with it a ClusterQueue holding both checks
// dispatches nothing. The built-in controller answers for its check as an admission check
// controller does (docs/placement.md): a Workload holding quota whose placement check is Pending
// turns Ready once that AdmissionCheck is Active (its MultiKueueConfig lists the decided
// clusters). Nothing else: a later decision change moves new Workloads through the
// MultiKueueConfig, not the checks of those already Ready.
//
// Threads: reconcile() on the placement controller's workload worker (one key at a time).

#include <string>

#include "mka/common/clock.h"
#include "mka/controller/controller.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"

namespace mka::placement {

class WorkloadCheckReconciler {
 public:
  // Borrowed; must outlive the reconciler. `objects` reads Workloads and AdmissionChecks.
  WorkloadCheckReconciler(kube::Client& manager, const controller::ObjectReader& objects, const Clock& clock);

  // `key` is "<namespace>/<name>".
  controller::Result reconcile(const std::string& key);

 private:
  kube::Client& manager_;
  const controller::ObjectReader& objects_;
  const Clock& clock_;
};

}  // namespace mka::placement
