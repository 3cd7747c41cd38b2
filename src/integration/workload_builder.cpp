#include "mka/integration/workload_builder.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <map>

#include "mka/api/kueue.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/quantity.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"

namespace mka::integration {
namespace {

using nlohmann::json;

constexpr std::size_t kHashLength = 5;

std::string sha1Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha1(), nullptr) != 1)
    throw Error("SHA-1 digest failed (OpenSSL EVP_Digest): is OpenSSL's default provider available?");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

std::string labelOf(const json& job, std::string_view key) {
  const json* labels = json_fields::fieldAt(job, "metadata.labels");
  if (!labels || !labels->is_object()) return "";
  auto it = labels->find(std::string(key));
  return it != labels->end() && it->is_string() ? it->get<std::string>() : "";
}

using Requests = std::map<std::string, std::int64_t>;  // resource -> thousandths

json requestsJson(const Requests& requests) {
  json out = json::object();
  for (const auto& [name, milli] : requests) out[name] = quantity::formatMilli(milli);
  return out;
}

// One synthetic pod set: its pods are not described by any template in the job.
json syntheticPodSet(const std::string& name, const std::string& container, const Requests& requests) {
  return {{"name", name},
          {"count", 1},
          {"template",
           {{"spec",
             {{"containers", json::array({{{"name", container},
                                           {"image", container},
                                           {"resources", {{"requests", requestsJson(requests)}}}}})}}}}}};
}

// The job's pod fields at `paths` written where a pod template keeps them, in `podSet`'s template.
void copyPodFields(const json& job, const config::PodFieldPaths& paths, json& podSet) {
  if (paths.empty()) return;
  json& podTemplate = podSet["template"];
  struct Field {
    const std::string& from;
    const char* to;
    json::value_t type;
  };
  // A value of another type is left out: the framework's own validation reports it.
  for (const auto& [from, to, type] : {Field{paths.labels, "metadata.labels", json::value_t::object},
                                       Field{paths.annotations, "metadata.annotations", json::value_t::object},
                                       Field{paths.nodeSelector, "spec.nodeSelector", json::value_t::object},
                                       Field{paths.tolerations, "spec.tolerations", json::value_t::array}}) {
    if (from.empty()) continue;
    const json* value = json_fields::fieldAt(job, from);
    if (value == nullptr || value->type() != type || value->empty()) continue;
    json_fields::setFieldAt(podTemplate, to, *value);
  }
}

// `parent`'s child `key` as a field path: dotted, or bracketed when the key has dots of its own
// (resource names such as nvidia.com/gpu).
std::string childField(const std::string& parent, const std::string& key) {
  return key.find('.') == std::string::npos ? parent + "." + key : parent + "[" + key + "]";
}

// A request's value in thousandths: a quantity written as a string or a JSON number, as
// Kubernetes' Quantity reads both.
std::optional<std::int64_t> requestMilli(const json& value) {
  if (value.is_string()) return quantity::parseMilli(value.get<std::string>());
  if (value.is_number()) return quantity::parseMilli(value.dump());
  return std::nullopt;
}

// One container of a Workflow template: where it is, for the error that names a bad request.
struct ArgoContainer {
  const json& container;
  std::string field;         // its path in the Workflow, "spec.templates[2].container"
  const std::string& owner;  // its template's name
};

// The container's resources.requests added into `into` (`max`: kept at the larger of the two).
// A request that is not a quantity is an error naming its field: the pod set would miss what
// the pod needs, and the pod itself could not be created.
std::optional<RuleError> addRequests(Requests& into, const ArgoContainer& c, bool max) {
  const json* requests = json_fields::fieldAt(c.container, "resources.requests");
  if (requests == nullptr || !requests->is_object()) return std::nullopt;
  for (const auto& [name, value] : requests->items()) {
    const auto milli = requestMilli(value);
    if (!milli || *milli < 0) {
      return RuleError{childField(c.field + ".resources.requests", name),
                       "template \"" + c.owner + "\" requests " + value.dump() + " of " + name +
                           ", which is not a quantity: write a non-negative quantity such as \"4\", \"500m\" or "
                           "\"2Gi\" in the Workflow"};
    }
    auto& slot = into[name];
    slot = max ? std::max(slot, *milli) : slot + *milli;
  }
  return std::nullopt;
}

void maxInto(Requests& into, const Requests& other) {
  for (const auto& [name, milli] : other) into[name] = std::max(into[name], milli);
}

// The requests of one Workflow template's pod (Kubernetes' pod request: containers and sidecars
// summed, init containers maxed), or nullopt when the template runs no pod.
std::optional<Requests> templateRequests(const json& tmpl, const std::string& field, std::optional<RuleError>& error) {
  const std::string name = json_fields::stringMember(tmpl, "name");
  Requests pod;
  bool runsPod = false;
  const auto add = [&](const json& container, const std::string& at, bool max) {
    if (!error) error = addRequests(pod, {container, at, name}, max);
  };
  for (const char* single : {"container", "script"}) {
    if (auto it = tmpl.find(single); it != tmpl.end() && it->is_object()) {
      add(*it, field + "." + single, false);
      runsPod = true;
    }
  }
  if (auto set = tmpl.find("containerSet"); set != tmpl.end() && set->is_object()) {
    const auto& containers = json_fields::arrayMember(*set, "containers");
    for (std::size_t i = 0; i < containers.size(); ++i)
      add(containers[i], field + ".containerSet.containers[" + std::to_string(i) + "]", false);
    runsPod = true;
  }
  if (!runsPod) return std::nullopt;
  for (const auto& [list, max] : {std::pair{"sidecars", false}, std::pair{"initContainers", true}}) {
    const auto& containers = json_fields::arrayMember(tmpl, list);
    for (std::size_t i = 0; i < containers.size(); ++i)
      add(containers[i], field + "." + list + "[" + std::to_string(i) + "]", max);
  }
  return pod;
}

// The requests of each Workflow template that runs a pod, maxed element-wise; an error names
// the first request that is not a quantity.
Requests argoRequests(const json& workflow, std::optional<RuleError>& error) {
  Requests out;
  const auto& templates = json_fields::arrayMember(json_fields::objectMember(workflow, "spec"), "templates");
  for (std::size_t i = 0; i < templates.size(); ++i) {
    const auto pod = templateRequests(templates[i], "spec.templates[" + std::to_string(i) + "]", error);
    if (error) return out;
    if (pod) maxInto(out, *pod);
  }
  return out;
}

// The job's kPodSetRequestsAnnotation, when set.
std::optional<Requests> statedRequests(const json& job, std::optional<RuleError>& error) {
  const json& annotations = json_fields::objectMember(json_fields::objectMember(job, "metadata"), "annotations");
  const std::string text = json_fields::stringMember(annotations, kPodSetRequestsAnnotation);
  if (!annotations.contains(std::string(kPodSetRequestsAnnotation))) return std::nullopt;
  const std::string field = "metadata.annotations[" + std::string(kPodSetRequestsAnnotation) + "]";
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    error = RuleError{field, "must be a JSON object of resource names to quantities, such as {\"cpu\":\"4\"}, not " +
                                 (text.empty() ? std::string("an empty value") : "'" + text + "'")};
    return std::nullopt;
  }
  Requests out;
  for (const auto& [name, value] : parsed.items()) {
    const auto milli = value.is_string() ? quantity::parseMilli(value.get<std::string>()) : std::nullopt;
    if (name.empty() || !milli || *milli < 0) {
      error = RuleError{field, "the request for \"" + name +
                                   "\" must be a non-negative quantity (\"4\", \"500m\", "
                                   "\"2Gi\") written as a string, not " +
                                   value.dump()};
      return std::nullopt;
    }
    out[name] = *milli;
  }
  return out;
}

// tekton-kueue's requests: its annotations plus one of the synthetic PipelineRun resource.
Requests tektonRequests(const json& job, std::optional<RuleError>& error) {
  Requests out;
  const json& annotations = json_fields::objectMember(json_fields::objectMember(job, "metadata"), "annotations");
  for (const auto& [key, value] : annotations.items()) {
    if (!key.starts_with(kTektonRequestsPrefix)) continue;
    const std::string resource = key.substr(kTektonRequestsPrefix.size());
    const std::string field = "metadata.annotations[" + key + "]";
    if (resource.empty()) {
      error = RuleError{field, "empty resource name in annotation " + key};
      return out;
    }
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    const auto milli = quantity::parseMilli(text);
    if (!milli) {
      error = RuleError{field, "invalid resource quantity in annotation " + key + "=\"" + text +
                                   "\": " + std::string(quantity::kSyntaxError)};
      return out;
    }
    out[resource] = *milli;
  }
  return out;
}

// The pod sets a profile computes (PodSetsFrom other than Rules).
PodSetsResult computedPodSets(const json& job, const config::IntegratedFramework& framework) {
  PodSetsResult out;
  auto stated = statedRequests(job, out.error);
  if (out.error) return out;
  if (framework.podSetsFrom == config::PodSetsFrom::ArgoTemplates) {
    const Requests requests = stated ? *stated : argoRequests(job, out.error);
    if (out.error) return out;
    out.podSets.push_back(syntheticPodSet("main", "dummy", requests));
    // What the Workflow gives all its pods is the pod set's too: Kueue matches flavors against
    // its node selector, and stopping restores the Workflow's fields from it.
    if (!framework.podSets.empty()) copyPodFields(job, framework.podSets.front().podFieldPaths(), out.podSets.back());
    return out;
  }
  Requests requests = stated ? *stated : tektonRequests(job, out.error);
  if (out.error) return out;
  requests[std::string(kTektonPipelineRunsResource)] = 1000;
  out.podSets.push_back(syntheticPodSet("pod-set-1", "dummy", requests));
  // The node selector and tolerations every TaskRun's pod gets are the pod set's too: Kueue
  // passes over a flavor whose node labels they contradict or whose taints they do not
  // tolerate. The run's own metadata stays out (kubectl's last-applied annotation alone may be
  // the size of the run).
  if (!framework.podSets.empty()) {
    auto paths = framework.podSets.front().podFieldPaths();
    paths.labels.clear();
    paths.annotations.clear();
    copyPodFields(job, paths, out.podSets.back());
  }
  return out;
}

}  // namespace

PodSetsResult podSetsFor(const json& job, const config::IntegratedFramework& framework) {
  PodSetsResult out = framework.podSetsFrom == config::PodSetsFrom::Rules ? podSetsFromRules(job, framework)
                                                                          : computedPodSets(job, framework);
  // Configuration refuses more rules than this; pod sets a profile computes are checked here,
  // before the API server refuses the Workload on every pass.
  if (!out.error && out.podSets.size() > api::kMaxPodSets) {
    out.error = RuleError{"Workload spec.podSets", "the job's pod sets number " + std::to_string(out.podSets.size()) +
                                                       ", more than the " + std::to_string(api::kMaxPodSets) +
                                                       " a Kueue Workload holds (its CRD's maxItems): " +
                                                       "split the job, or merge pod sets whose pods are alike"};
  }
  return out;
}

std::string workloadName(const api::GroupVersionKind& gvk, std::string_view jobName, std::string_view jobUid,
                         std::size_t maxLength) {
  std::string prefix = strings::toLower(gvk.kind) + "-" + std::string(jobName);
  prefix.resize(std::min(prefix.size(), maxLength - 1 - kHashLength));
  const std::string hashed = gvk.kind + "\n" + gvk.group + "\n" + std::string(jobName) + "\n" + std::string(jobUid);
  return prefix + "-" + sha1Hex(hashed).substr(0, kHashLength);
}

PodSetsResult podSetsFromRules(const json& job, const config::IntegratedFramework& framework) {
  PodSetsResult out;
  for (const auto& rule : framework.podSets) {
    std::int64_t count = rule.count.value.value_or(rule.count.defaultValue);
    if (!rule.count.value) {
      if (const json* field = json_fields::fieldAt(job, rule.count.path); field && !field->is_null()) {
        if (!field->is_number_integer() || field->get<std::int64_t>() < 0 || field->get<std::int64_t>() > INT32_MAX) {
          out.error =
              RuleError{rule.count.path, "the pod set " + rule.name + "'s count must be a whole number from 0 to " +
                                             std::to_string(INT32_MAX) + ", not " + field->dump()};
          return out;
        }
        count = field->get<std::int64_t>();
      }
    }
    const json* podTemplate = json_fields::fieldAt(job, rule.templatePath);
    if (!podTemplate || !podTemplate->is_object()) {
      out.error =
          RuleError{rule.templatePath, podTemplate ? "the pod set " + rule.name +
                                                         "'s template must be a pod template (an object), not " +
                                                         std::string(podTemplate->type_name())
                                                   : "the pod set " + rule.name + "'s template is missing"};
      return out;
    }
    out.podSets.push_back({{"name", rule.name}, {"count", count}, {"template", *podTemplate}});
  }
  return out;
}

json newWorkload(const json& job, const api::GroupVersionKind& gvk, json podSets,
                 const std::optional<Priority>& priority, const std::vector<std::string>& labelKeysToCopy) {
  const auto& meta = job.at("metadata");
  const std::string name = meta.value("name", "");
  const std::string uid = meta.value("uid", "");
  json workload = {{"apiVersion", api::kWorkloadGvk.apiVersion()},
                   {"kind", api::kWorkloadGvk.kind},
                   {"metadata",
                    {{"name", workloadName(gvk, name, uid)},
                     {"namespace", meta.value("namespace", "")},
                     {"ownerReferences",
                      {{{"apiVersion", gvk.apiVersion()},
                        {"kind", gvk.kind},
                        {"name", name},
                        {"uid", uid},
                        {"controller", true},
                        {"blockOwnerDeletion", true}}}},
                     {"finalizers", {api::kResourceInUseFinalizer}}}},
                   {"spec", {{"podSets", std::move(podSets)}}}};
  // queueName is omitempty in Kueue's Go type, and the CRD refuses an empty one.
  if (const std::string queue = labelOf(job, api::kQueueNameLabel); !queue.empty())
    workload["spec"]["queueName"] = queue;
  // ProvisioningRequest parameters the job passes to the provisioning admission check.
  for (const auto& [key, value] : json_fields::objectMember(meta, "annotations").items())
    if (key.starts_with("provreq.kueue.x-k8s.io/") && value.is_string())
      workload["metadata"]["annotations"][key] = value;
  // Kueue writes the job-uid label only when the uid is a valid label value.
  if (validation::labelValue(uid).empty() && !uid.empty())
    workload["metadata"]["labels"] = {{std::string(api::kJobUidLabel), uid}};
  const json& jobLabels = json_fields::objectMember(meta, "labels");
  for (const auto& key : labelKeysToCopy)
    if (auto it = jobLabels.find(key); it != jobLabels.end() && it->is_string())
      workload["metadata"]["labels"][key] = *it;
  const std::string maxExec = labelOf(job, api::kMaxExecTimeLabel);
  std::int32_t seconds = 0;
  const auto [end, ec] = std::from_chars(maxExec.data(), maxExec.data() + maxExec.size(), seconds);
  if (!maxExec.empty() && ec == std::errc{} && end == maxExec.data() + maxExec.size() && seconds > 0)
    workload["spec"]["maximumExecutionTimeSeconds"] = seconds;
  if (priority) setPriority(workload["spec"], *priority);
  return workload;
}

void setPriority(json& spec, const Priority& priority) {
  spec.erase("priorityClassRef");
  if (!priority.name.empty())
    spec["priorityClassRef"] = {{"group", priority.group}, {"kind", priority.kind}, {"name", priority.name}};
  spec["priority"] = priority.value;
}

}  // namespace mka::integration
