#pragma once
// POST /mutate-children: each object a started job's controller creates to run its pods
// (config::ChildRule: Tekton's TaskRuns) given its admission's node selector and tolerations,
// which the job itself could not take (its spec takes no change once created). A child names
// its pod set and Workload by what the job passes on to it: the label kueue.x-k8s.io/podset and
// the annotation kueue.x-k8s.io/workload, which the integration's start wrote into the job's
// metadata. The Workload and its flavors are read from memory (AdmittedWorkloads), and the pod
// set's info computed as the start computes it (api::podSetInfos).
//
// Threads: pure apart from the borrowed cache; called concurrently by the webhook's threads.

#include "mka/config/configuration.h"
#include "mka/webhook/admission_review.h"
#include "mka/webhook/admitted_workloads.h"

namespace mka::webhook {

// Allowed without a patch: an operation other than CREATE, a kind no integrated framework's
// children rule names, a child without the pod set label (of a job Kueue did not start), and a
// child that holds the values already. Denied (403), the message naming the child, the Workload
// and what to do: the Workload or a flavor not in the cache (it may lag, and the controller
// retries a refused creation), a Workload without an admission, a pod set the admission lacks,
// admission checks whose podSetUpdates conflict, and a node selector key the child holds with
// another value (Kueue's conflict, with the field). `workloads` null: throws mka::Error (the
// handler answers 500) for a child that needs the cache.
AdmissionResponse mutateChild(const AdmissionRequest& request, const config::Configuration& config,
                              const AdmittedWorkloads* workloads);

}  // namespace mka::webhook
