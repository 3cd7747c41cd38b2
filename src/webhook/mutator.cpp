#include "mka/webhook/mutator.h"

#include <spdlog/spdlog.h>

#include "mka/api/kueue.h"
#include "mka/common/json_fields.h"
#include "mka/jobkind/job_kind.h"
#include "mka/webhook/log_value.h"
#include "mka/webhook/object_meta.h"

namespace mka::webhook {
namespace {

using api::kQueueNameLabel;

AdmissionResponse withPatch(const AdmissionRequest& request, const jobkind::JobKind& kind) {
  AdmissionResponse response;
  auto patch = kind.managedByPatch(request.object);
  if (!patch.empty()) response.patch = std::move(patch);
  return response;
}

AdmissionResponse withWarning(std::string warning) {
  AdmissionResponse response;
  response.warnings.push_back(std::move(warning));
  return response;
}

void skipped(const AdmissionRequest& request, std::string_view why) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  spdlog::debug("managedBy not defaulted uid={} object={} kind={} why={}", logValue(request.uid),
                logValue(request.objectKey()), logValue(request.kind.kind), logValue(why));
}

}  // namespace

AdmissionResponse mutateJob(const AdmissionRequest& request, const config::Configuration& config,
                            const QueueIndex& queues) {
  // Kueue defaults managedBy on CREATE only (KUEUE-MULTIKUEUE.md §5.1); afterwards it is immutable.
  if (request.operation != "CREATE" || !request.object.is_object()) return AdmissionResponse::allow();

  const config::ExternalFramework* framework = config.findFramework(request.kind);
  if (!framework) {
    skipped(request, "kind is not a configured external framework");
    return AdmissionResponse::allow();
  }
  const jobkind::JobKind kind(*framework);
  const config::ManagedByLocation& where = kind.managedBy();

  // Any non-empty value is kept: it is either ours already or a third party's choice.
  if (auto current = kind.managedByValue(request.object); current && !current->empty()) {
    skipped(request, "managedBy already set");
    return AdmissionResponse::allow();
  }

  const auto queue = labelOf(request.object, kQueueNameLabel);
  if (!queue || queue->empty()) {
    skipped(request, "no queue-name label");
    return AdmissionResponse::allow();
  }

  switch (config.managedByDefaulting) {
    case config::ManagedByDefaulting::Never:
      skipped(request, "managedByDefaulting is Never");
      return AdmissionResponse::allow();
    case config::ManagedByDefaulting::QueueLabeled: return withPatch(request, kind);
    case config::ManagedByDefaulting::MultiKueueQueues: break;
  }

  const std::string ns =
      request.namespace_.empty() ? json_fields::metadataString(request.object, "namespace") : request.namespace_;
  const std::string localQueue = ns + "/" + std::string(*queue);
  const auto lookup = queues.lookup(ns, *queue, config.multiKueueControllerNames());
  switch (lookup.result) {
    case QueueLookup::Result::MultiKueue: return withPatch(request, kind);
    case QueueLookup::Result::LocalQueueNotFound:
      return withWarning("LocalQueue " + localQueue + " not found: " + where.fieldPath() +
                         " was not defaulted; create the LocalQueue before submitting jobs to it");
    case QueueLookup::Result::ClusterQueueNotFound:
      return withWarning("ClusterQueue " + lookup.clusterQueue + " of LocalQueue " + localQueue +
                         " not found: " + where.fieldPath() + " was not defaulted; create the ClusterQueue first");
    case QueueLookup::Result::NotMultiKueue:
      skipped(request, "ClusterQueue " + lookup.clusterQueue + " has no MultiKueue admission check");
      return AdmissionResponse::allow();
  }
  return AdmissionResponse::allow();
}

}  // namespace mka::webhook
