#pragma once
// POST /mutate-children: each object a started job's controller creates to run its pods
// (config::ChildRule: Tekton's TaskRuns) given its admission's node selector and tolerations,
// which the job itself could not take (its spec takes no change once created). The start wrote
// them into the job's metadata as the annotation config::kChildPlacementAnnotation, and the
// job's controller copied it to the child: the webhook reads nothing but the request.
//
// Threads: pure; called concurrently by the webhook's threads.

#include "mka/config/configuration.h"
#include "mka/webhook/admission_review.h"

namespace mka::webhook {

// Allowed without a patch: an operation other than CREATE, a kind no integrated framework's
// children rule names, a child without the annotation (of a job Kueue did not start, or whose
// admission adds nothing), and a child that holds the values already. Denied (403), naming the
// child, the field and what to do: an annotation that is not the JSON the start writes, and a
// node selector key the child holds with another value (Kueue's conflict).
AdmissionResponse mutateChild(const AdmissionRequest& request, const config::Configuration& config);

}  // namespace mka::webhook
