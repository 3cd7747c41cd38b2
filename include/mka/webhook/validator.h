#pragma once
// POST /validate (job rules) and POST /validate-config (ConfigMaps holding our configuration).

#include "mka/config/configuration.h"
#include "mka/webhook/admission_review.h"

namespace mka::webhook {

AdmissionResponse validateJob(const AdmissionRequest& request, const config::Configuration& config);
AdmissionResponse validateConfigMap(const AdmissionRequest& request);

}  // namespace mka::webhook
