#pragma once
// A webhook's matchConditions as kube-apiserver reads them (k8s.io/apiserver/pkg/admission/
// plugin/webhook/matchconditions, and ValidateMutating/ValidatingWebhookConfiguration in
// k8s.io/kubernetes/pkg/apis/admissionregistration/validation): CEL expressions over `object`,
// `oldObject` (null on CREATE) and `request` (the AdmissionRequest without the objects), all of
// which must be true for the webhook to be called. Differences, on purpose:
// - `authorizer` is refused when the configuration is written (the sandbox authorizes nothing);
//   kube-apiserver would evaluate it.
// - The interpreter is mka/cel's subset, which has no type checker: an expression whose value is
//   not a bool is an error when it is evaluated (kube-apiserver refuses it when it is written).
//   It also refuses a CEL reserved word selected with a dot (request.namespace,
//   object.metadata.namespace): write request['namespace'].
//
// Threads: pure functions.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/common/errors.h"

namespace mka::sandbox::detail {

// What kube-apiserver checks of the matchConditions of a Mutating- or
// ValidatingWebhookConfiguration before it stores one: at most 64 per webhook, names qualified
// and unique, expressions present and compilable, each error naming its field
// ("webhooks[0].matchConditions[0].expression"). `old` is the stored configuration on an update
// (null on create): as kube-apiserver does, an update that leaves every webhook's conditions as
// they were is not checked again.
FieldErrors validateMatchConditions(const nlohmann::json& configuration, const nlohmann::json& old);

// The outcome of one webhook's conditions for one request.
struct ConditionsOutcome {
  bool call = true;  // every condition true: call the webhook
  // Set when a condition failed to evaluate, none was false and failurePolicy is Fail (the
  // request is then refused, 403): "expression '<e>' resulted in error: <why>", several as
  // "[a, b]". Under Ignore such a webhook is skipped instead.
  std::optional<std::string> error;
};

// Evaluates `hook`'s matchConditions, in order: the first false one skips the webhook.
// `request` is the AdmissionRequest's JSON; `object` and `oldObject` are at the version the
// webhook is called with.
ConditionsOutcome evaluateMatchConditions(const nlohmann::json& hook, const nlohmann::json& object,
                                          const nlohmann::json& oldObject, const nlohmann::json& request);

}  // namespace mka::sandbox::detail
