#include "mka/webhook/mutator.h"

#include <spdlog/spdlog.h>

#include "mka/api/kueue.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/jobkind/job_kind.h"
#include "mka/webhook/object_meta.h"

namespace mka::webhook {
namespace {

using api::kDefaultLocalQueue;
using api::kQueueNameLabel;

// What the marker half of the answer adds: JSONPatch operations, or a warning.
struct Marker {
  nlohmann::json patch = nlohmann::json::array();
  std::vector<std::string> warnings;
};

Marker withWarning(std::string warning) {
  Marker marker;
  marker.warnings.push_back(std::move(warning));
  return marker;
}

void skipped(const AdmissionRequest& request, std::string_view why) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  log::debug("managedBy not defaulted",
             {{"uid", request.uid}, {"object", request.objectKey()}, {"kind", request.kind.kind}, {"why", why}});
}

Marker defaultMarker(const AdmissionRequest& request, const config::Configuration& config, const QueueIndex& queues,
                     const jobkind::JobKind& kind, const std::optional<std::string_view>& queue) {
  if (!kind.dispatched()) {
    skipped(request, "kind is not a configured external framework");
    return {};
  }
  const config::ManagedByLocation& where = kind.managedBy();
  // Any non-empty value is kept: it is either ours already or a third party's choice.
  if (auto current = kind.managedByValue(request.object); current && !current->empty()) {
    skipped(request, "managedBy already set");
    return {};
  }
  if (!queue || queue->empty()) {
    skipped(request, "no queue-name label");
    return {};
  }
  switch (config.managedByDefaulting) {
    case config::ManagedByDefaulting::Never: skipped(request, "managedByDefaulting is Never"); return {};
    case config::ManagedByDefaulting::QueueLabeled: return {kind.managedByPatch(request.object), {}};
    case config::ManagedByDefaulting::MultiKueueQueues: break;
  }

  const std::string ns = request.objectNamespace();
  const std::string localQueue = ns + "/" + std::string(*queue);
  const auto lookup = queues.lookup(ns, *queue, config.multiKueueControllerNames());
  switch (lookup.result) {
    case QueueLookup::Result::MultiKueue: return {kind.managedByPatch(request.object), {}};
    case QueueLookup::Result::LocalQueueNotFound:
      return withWarning("LocalQueue " + localQueue + " not found: " + where.fieldPath() +
                         " was not defaulted; create the LocalQueue before submitting jobs to it");
    case QueueLookup::Result::ClusterQueueNotFound:
      return withWarning("ClusterQueue " + lookup.clusterQueue + " of LocalQueue " + localQueue +
                         " not found: " + where.fieldPath() + " was not defaulted; create the ClusterQueue first");
    case QueueLookup::Result::NotMultiKueue:
      skipped(request, "ClusterQueue " + lookup.clusterQueue + " has no MultiKueue admission check");
      return {};
  }
  return {};
}

// Kueue's defaulting of the suspend field (KUEUE-JOBFRAMEWORK.md §5.1, SPEC §7.2) for a kind
// our integration queues: a job with a queue name or a prebuilt Workload starts suspended. A
// value other than an unset one (absent, null, false, "") was set on purpose and is kept.
nlohmann::json defaultSuspend(const nlohmann::json& job, const jobkind::JobKind& kind,
                              const std::optional<std::string_view>& queue) {
  const auto* rules = kind.integration();
  if (rules == nullptr || !rules->suspend) return nlohmann::json::array();
  const auto prebuilt = labelOf(job, api::kPrebuiltWorkloadNameKey);
  const auto prebuiltAnnotation = annotationOf(job, api::kPrebuiltWorkloadNameKey);
  const bool queued = (queue && !queue->empty()) || (prebuilt && !prebuilt->empty()) ||
                      (prebuiltAnnotation && !prebuiltAnnotation->empty());
  if (!queued) return nlohmann::json::array();
  const nlohmann::json* current = json_fields::fieldAt(job, rules->suspend->path);
  const bool unset = current == nullptr || current->is_null() || *current == false || *current == "";
  if (!unset) return nlohmann::json::array();
  return json_fields::setFieldPatch(job, strings::split(rules->suspend->path, '.'), rules->suspend->value);
}

// Kueue's LocalQueue defaulting (KUEUE-JOBFRAMEWORK.md §5.1 step 1) for a kind our integration
// queues: a job without a queue name, in a namespace with a LocalQueue named "default", is
// queued there, unless its controller is itself a kind we queue or dispatch (the parent's
// Workload covers it). The patch, or an empty array.
nlohmann::json defaultLocalQueue(const AdmissionRequest& request, const config::Configuration& config,
                                 const QueueIndex& queues, const jobkind::JobKind& kind,
                                 const std::optional<std::string_view>& queue) {
  if (kind.integration() == nullptr || (queue && !queue->empty()) ||
      !queues.hasDefaultLocalQueue(request.objectNamespace()))
    return nlohmann::json::array();
  const auto& owners =
      json_fields::arrayMember(json_fields::objectMember(request.object, "metadata"), "ownerReferences");
  for (const auto& owner : owners) {
    if (!owner.is_object() || owner.value("controller", false) != true) continue;
    const auto gvk = api::GroupVersionKind::fromApiVersion(json_fields::stringMember(owner, "apiVersion"),
                                                           json_fields::stringMember(owner, "kind"));
    if (jobkind::kindOf(config, gvk)) return nlohmann::json::array();
  }
  return json_fields::setFieldPatch(request.object, {"metadata", "labels", std::string(api::kQueueNameLabel)},
                                    std::string(kDefaultLocalQueue));
}

}  // namespace

AdmissionResponse mutateJob(const AdmissionRequest& request, const config::Configuration& config,
                            const QueueIndex& queues) {
  // Kueue defaults on CREATE only (KUEUE-MULTIKUEUE.md §5.1); afterwards managedBy is immutable.
  if (request.operation != "CREATE" || !request.object.is_object()) return AdmissionResponse::allow();

  const auto kind = jobkind::kindOf(config, request.kind);
  if (!kind) {
    skipped(request, "kind is neither a configured external framework nor an integrated one");
    return AdmissionResponse::allow();
  }
  // One JSONPatch, in Kueue's order: the queue name, the suspend value, the marker. Each part is
  // computed on the object the earlier parts leave, so no parent is added twice.
  nlohmann::json patch =
      defaultLocalQueue(request, config, queues, *kind, labelOf(request.object, api::kQueueNameLabel));
  std::optional<AdmissionRequest> defaulted;
  if (!patch.empty()) {
    defaulted = request;
    defaulted->object = request.object.patch(patch);
  }
  const AdmissionRequest& queued = defaulted ? *defaulted : request;
  const auto queue = labelOf(queued.object, api::kQueueNameLabel);
  Marker marker = defaultMarker(queued, config, queues, *kind, queue);
  nlohmann::json suspend = nlohmann::json::array();
  if (const auto* rules = kind->integration(); rules != nullptr && rules->suspend) {
    // Read on the object as the marker leaves it: a copy, so made only for a kind that reads it.
    suspend = marker.patch.empty() ? defaultSuspend(queued.object, *kind, queue)
                                   : defaultSuspend(queued.object.patch(marker.patch), *kind, queue);
  }
  for (auto& op : marker.patch) patch.push_back(std::move(op));
  for (auto& op : suspend) patch.push_back(std::move(op));

  AdmissionResponse response;
  response.warnings = std::move(marker.warnings);
  if (!patch.empty()) response.patch = std::move(patch);
  return response;
}

}  // namespace mka::webhook
