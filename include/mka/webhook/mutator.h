#pragma once
// POST /mutate: defaults the managedBy marker (SPEC §4).

#include "mka/config/configuration.h"
#include "mka/webhook/admission_review.h"
#include "mka/webhook/queue_index.h"

namespace mka::webhook {

AdmissionResponse mutateJob(const AdmissionRequest& request, const config::Configuration& config,
                            const QueueIndex& queues);

}  // namespace mka::webhook
