#pragma once
// POST /validate (job rules) and POST /validate-config (ConfigMaps holding our configuration).

#include "mka/config/configuration.h"
#include "mka/webhook/admission_review.h"
#include "mka/webhook/queue_index.h"

namespace mka::webhook {

// `queues` answers whether the job's namespace has a default LocalQueue.
AdmissionResponse validateJob(const AdmissionRequest& request, const config::Configuration& config,
                              const QueueIndex& queues);
AdmissionResponse validateConfigMap(const AdmissionRequest& request);

}  // namespace mka::webhook
