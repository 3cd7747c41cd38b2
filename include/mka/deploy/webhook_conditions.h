#pragma once
// The matchConditions of the validating job webhooks (kube-apiserver >= 1.28 evaluates them, GA
// in 1.30; 1.27 without its AdmissionWebhookMatchConditions gate drops the field and calls the
// webhook on every update, an older one refuses the field): an UPDATE reaches /validate
// only when it changes a field /validate checks on UPDATE (src/webhook/validator.cpp):
// - the managedBy marker of a dispatched kind, wherever the kind keeps it (a field path or a
//   label, so the expression names each kind's own place);
// - Kueue's labels kueue.x-k8s.io/queue-name, prebuilt-workload-name, max-exec-time-seconds and
//   priority-class, and the prebuilt-workload-name annotation.
// CREATEs always reach it. Why: under failurePolicy Fail, an adapter outage refuses every write
// the webhook is called for, and Argo writes a Workflow's status by updating the whole object,
// Tekton updates a PipelineRun's metadata: running jobs would stop making progress. Their writes
// change none of these fields, so they go through while the adapter is down.
//
// Threads: pure functions.

#include <string>

#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"

namespace mka::deploy {

// The name of the one condition.
inline constexpr std::string_view kCheckedFieldsCondition = "create-or-checked-field-change";

// The CEL expression: true on anything but an UPDATE, and on an UPDATE that changes one of the
// fields above (a value added, removed or changed).
std::string checkedFieldsChangedExpression(const config::Configuration& configuration);

// [{name: kCheckedFieldsCondition, expression: ...}], for the webhooks' matchConditions.
nlohmann::ordered_json validateMatchConditions(const config::Configuration& configuration);

// The condition of /mutate-children: the child carries config::kChildPlacementAnnotation, which
// only a child of a job started with a node selector or tolerations to pass on carries. Other
// children (a run admitted where no flavor adds any) are created without calling the adapter,
// so an adapter outage holds up only those that need it.
inline constexpr std::string_view kCarriesPlacementCondition = "carries-pod-placement";
nlohmann::ordered_json childMatchConditions();

}  // namespace mka::deploy
