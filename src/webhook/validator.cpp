#include "mka/webhook/validator.h"

#include <charconv>
#include <optional>

#include "mka/api/kueue.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"
#include "mka/config/loader.h"
#include "mka/jobkind/job_kind.h"
#include "mka/webhook/object_meta.h"

namespace mka::webhook {
namespace {

using api::kMaxExecTimeLabel;
using api::kPrebuiltWorkloadNameKey;
using api::kPriorityClassLabel;
using api::kQueueNameLabel;

std::string describe(const std::optional<std::string>& value) {
  return value ? strings::quotedExcerpt(*value) : "unset";
}

std::string joined(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

std::string labelPath(std::string_view key) { return "metadata.labels[" + std::string(key) + "]"; }
std::string annotationPath(std::string_view key) { return "metadata.annotations[" + std::string(key) + "]"; }

void checkSubdomain(std::optional<std::string_view> value, const std::string& path, std::string_view fix,
                    FieldErrors& problems) {
  if (!value) return;
  auto errors = validation::dns1123Subdomain(*value);
  if (errors.empty()) return;
  problems.push_back(
      {path, "invalid value " + strings::quotedExcerpt(*value) + ": " + joined(errors, ", "), std::string(fix)});
}

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::optional<std::string> stringOf(std::optional<std::string_view> value) {
  return value ? std::optional<std::string>(*value) : std::nullopt;
}

bool suspendedByRule(const nlohmann::json& object, const config::IntegratedFramework& rules) {
  if (!rules.suspend) return false;
  const nlohmann::json* suspend = json_fields::fieldAt(object, rules.suspend->path);
  return suspend != nullptr && *suspend == rules.suspend->value;
}

// Kueue's ValidateJobOnUpdate for a kind our integration queues (KUEUE-JOBFRAMEWORK.md §5.3):
// while the job runs, its Workload is bound to the queue, the prebuilt Workload it names and
// its time limit.
void checkWhileResumed(const AdmissionRequest& request, const config::IntegratedFramework& rules,
                       FieldErrors& problems) {
  if (!rules.suspend || suspendedByRule(request.object, rules)) return;
  const std::string fix = "set " + rules.suspend->path + " to " + rules.suspend->value.dump() +
                          " first, or keep the old value while the job runs";
  const auto immutable = [&](const std::string& path, const std::optional<std::string>& before,
                             const std::optional<std::string>& after) {
    if (before == after) return;
    problems.push_back({path,
                        "Invalid value: " + (after ? strings::quotedExcerpt(*after) : std::string("unset")) +
                            ": field is immutable while the job is not suspended (it was " + describe(before) + ")",
                        fix});
  };
  immutable(labelPath(api::kQueueNameLabel), stringOf(labelOf(request.oldObject, api::kQueueNameLabel)),
            stringOf(labelOf(request.object, api::kQueueNameLabel)));
  // The name Kueue resolves (annotation first, then label) is what is bound: moving it from
  // the label to the annotation with the same value changes nothing.
  const auto prebuilt = [](const nlohmann::json& object) -> std::optional<std::string> {
    const auto annotation = annotationOf(object, api::kPrebuiltWorkloadNameKey);
    if (annotation && !annotation->empty()) return std::string(*annotation);
    return stringOf(labelOf(object, api::kPrebuiltWorkloadNameKey));
  };
  const auto annotated = annotationOf(request.object, api::kPrebuiltWorkloadNameKey);
  immutable(annotated && !annotated->empty() ? annotationPath(api::kPrebuiltWorkloadNameKey)
                                             : labelPath(api::kPrebuiltWorkloadNameKey),
            prebuilt(request.oldObject), prebuilt(request.object));
  immutable(labelPath(kMaxExecTimeLabel), stringOf(labelOf(request.oldObject, kMaxExecTimeLabel)),
            stringOf(labelOf(request.object, kMaxExecTimeLabel)));
}

// Kueue's rule for a namespace with a default LocalQueue (KUEUE-JOBFRAMEWORK.md §5.3): a queue
// name is not removed there, since the defaulting would only put "default" back on a new job.
void checkDefaultQueueKept(const AdmissionRequest& request, const QueueIndex& queues, FieldErrors& problems) {
  const auto before = labelOf(request.oldObject, api::kQueueNameLabel);
  const auto after = labelOf(request.object, api::kQueueNameLabel);
  if (!before || before->empty() || (after && !after->empty())) return;
  const std::string ns = request.objectNamespace();
  if (!queues.hasDefaultLocalQueue(ns)) return;
  problems.push_back({labelPath(api::kQueueNameLabel),
                      "Invalid value: \"\": queue-name must not be empty in namespace with default queue",
                      "keep the label, or set it to another LocalQueue of namespace " + ns});
}

// Kueue's rules for the priority and maximum-execution-time labels (KUEUE-JOBFRAMEWORK.md §5.2,
// §5.3): a class is never removed (the Workload keeps the priority it was admitted with), and
// added only while the job is suspended; a time limit is a positive number of seconds.
void checkKueueLabels(const AdmissionRequest& request, const config::IntegratedFramework& rules, bool update,
                      FieldErrors& problems) {
  if (const auto limit = labelOf(request.object, kMaxExecTimeLabel)) {
    long long seconds = 0;
    const auto [end, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), seconds);
    const std::string fix = "set it to a whole number of seconds greater than 0, or remove the label";
    if (ec != std::errc{} || end != limit->data() + limit->size() || seconds > 2147483647LL) {
      problems.push_back({labelPath(kMaxExecTimeLabel),
                          "Invalid value: " + strings::quotedExcerpt(*limit) + ": not a whole number of seconds", fix});
    } else if (seconds <= 0) {
      problems.push_back({labelPath(kMaxExecTimeLabel),
                          "Invalid value: " + strings::quotedExcerpt(*limit) + ": should be greater than 0", fix});
    }
  }
  if (!update) return;
  const auto before = labelOf(request.oldObject, kPriorityClassLabel);
  const auto after = labelOf(request.object, kPriorityClassLabel);
  if (before && !after) {
    problems.push_back({labelPath(kPriorityClassLabel),
                        "Invalid value: unset: WorkloadPriorityClass cannot be removed from a workload",
                        "keep the label (it may name another WorkloadPriorityClass)"});
  } else if (!before && after && !suspendedByRule(request.object, rules)) {
    problems.push_back({labelPath(kPriorityClassLabel),
                        "Invalid value: " + strings::quotedExcerpt(*after) +
                            ": WorkloadPriorityClass cannot be added to a non-suspended workload",
                        rules.suspend ? "set " + rules.suspend->path + " to " + rules.suspend->value.dump() + " first"
                                      : std::string("add it when the job is created")});
  }
}

AdmissionResponse denyAll(const AdmissionRequest& request, const FieldErrors& problems) {
  return AdmissionResponse::deny(request.objectKey() + ": " + joinErrors(problems, "; "));
}

}  // namespace

AdmissionResponse validateJob(const AdmissionRequest& request, const config::Configuration& config,
                              const QueueIndex& queues) {
  const bool update = request.operation == "UPDATE";
  if ((request.operation != "CREATE" && !update) || !request.object.is_object()) return AdmissionResponse::allow();
  const auto found = jobkind::kindOf(config, request.kind);
  if (!found) return AdmissionResponse::allow();

  const jobkind::JobKind& jobKind = *found;
  const config::ManagedByLocation& where = jobKind.managedBy();
  const std::string& kind = request.kind.kind;
  FieldErrors problems;
  const auto current = jobKind.managedByValue(request.object);

  // Kueue relies on each kind's own API to freeze managedBy (KUEUE-MULTIKUEUE.md §5.2); Argo's
  // label and older CRDs have no such rule, and a job that changes hands after creation could
  // run on the manager and a worker at once.
  if (update && jobKind.dispatched()) {
    const auto previous = jobKind.managedByValue(request.oldObject);
    if (previous != current) {
      problems.push_back({where.fieldPath(), "field is immutable",
                          "it was " + describe(previous) + " and the update " +
                              (current ? "sets " + strings::quotedExcerpt(*current) : std::string("removes it")) +
                              "; keep the old value, or delete and re-create the " + kind});
    }
  }

  // Kueue's generic job rules (KUEUE-MULTIKUEUE.md §5.2), which it does not apply to external
  // kinds. An empty queue name means "not queued", as it does for Kueue.
  const auto queue = labelOf(request.object, api::kQueueNameLabel);
  const bool queued = queue && !queue->empty();
  if (queued) {
    checkSubdomain(queue, labelPath(api::kQueueNameLabel), "set it to the name of a LocalQueue in the job's namespace",
                   problems);
  }
  constexpr std::string_view prebuiltFix = "set it to the name of the prebuilt Workload (a DNS-1123 subdomain)";
  checkSubdomain(labelOf(request.object, api::kPrebuiltWorkloadNameKey), labelPath(api::kPrebuiltWorkloadNameKey),
                 prebuiltFix, problems);
  checkSubdomain(annotationOf(request.object, api::kPrebuiltWorkloadNameKey),
                 annotationPath(api::kPrebuiltWorkloadNameKey), prebuiltFix, problems);

  if (jobKind.integration() != nullptr) {
    checkKueueLabels(request, *jobKind.integration(), update, problems);
    if (update) checkWhileResumed(request, *jobKind.integration(), problems);
    if (update) checkDefaultQueueKept(request, queues, problems);
  }

  AdmissionResponse response = problems.empty() ? AdmissionResponse::allow() : denyAll(request, problems);
  if (jobKind.dispatched() && !queued && current && *current == where.value) {
    // Kueue creates Workloads only for queued jobs, so this job would wait forever.
    response.warnings.push_back(request.objectKey() + ": " + where.fieldPath() + " is set without label " +
                                std::string(api::kQueueNameLabel) + ": Kueue will never admit it; add the label");
  }
  return response;
}

AdmissionResponse validateConfigMap(const AdmissionRequest& request) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") return AdmissionResponse::allow();
  // A webhook configuration that routes other kinds here is a deployment mistake; blocking
  // those objects would make it an outage.
  if (!request.kind.group.empty() || request.kind.kind != "ConfigMap") {
    log::debug("validate-config skipped a non-ConfigMap", {{"kind", request.kind.kind}, {"uid", request.uid}});
    return AdmissionResponse::allow();
  }
  if (labelOf(request.object, config::kConfigMapLabel) != std::optional<std::string_view>("true")) {
    return AdmissionResponse::allow();
  }

  FieldErrors errors;
  bool found = false;
  const auto data = request.object.is_object() ? request.object.find("data") : request.object.end();
  if (data != request.object.end() && data->is_object()) {
    for (const auto& [key, value] : data->items()) {
      if (!endsWith(key, ".yaml") && !endsWith(key, ".yml")) continue;
      found = true;
      const std::string prefix = "data[" + key + "]";
      if (!value.is_string()) {
        errors.push_back({prefix, "must be a string", "put the configuration YAML text here"});
        continue;
      }
      auto result = config::parseConfiguration(value.get_ref<const std::string&>(), prefix + ".");
      errors.insert(errors.end(), result.errors.begin(), result.errors.end());
    }
  }
  if (!found) {
    errors.push_back({"data", "no configuration found",
                      "put the AdapterConfiguration (or Kueue Configuration) YAML under data[config.yaml]"});
  }
  return errors.empty() ? AdmissionResponse::allow() : denyAll(request, errors);
}

}  // namespace mka::webhook
