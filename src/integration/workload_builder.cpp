#include "mka/integration/workload_builder.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <climits>

#include "mka/api/kueue.h"
#include "mka/common/errors.h"
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

// The value at a dotted path ("spec.replicas"), or nullptr when a step is missing or not an
// object.
const json* at(const json& object, const std::string& path) {
  const json* node = &object;
  for (const auto& key : strings::split(path, '.')) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

std::string labelOf(const json& job, std::string_view key) {
  const json* labels = at(job, "metadata.labels");
  if (!labels || !labels->is_object()) return "";
  auto it = labels->find(std::string(key));
  return it != labels->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

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
      if (const json* field = at(job, rule.count.path); field && !field->is_null()) {
        if (!field->is_number_integer() || field->get<std::int64_t>() < 0 || field->get<std::int64_t>() > INT32_MAX) {
          out.error =
              RuleError{rule.count.path, "the pod set " + rule.name + "'s count must be a whole number from 0 to " +
                                             std::to_string(INT32_MAX) + ", not " + field->dump()};
          return out;
        }
        count = field->get<std::int64_t>();
      }
    }
    const json* podTemplate = at(job, rule.templatePath);
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
                 const std::optional<Priority>& priority) {
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
                   {"spec", {{"queueName", labelOf(job, api::kQueueNameLabel)}, {"podSets", std::move(podSets)}}}};
  // Kueue writes the job-uid label only when the uid is a valid label value.
  if (validation::labelValue(uid).empty() && !uid.empty())
    workload["metadata"]["labels"] = {{std::string(api::kJobUidLabel), uid}};
  const std::string maxExec = labelOf(job, api::kMaxExecTimeLabel);
  std::int32_t seconds = 0;
  const auto [end, ec] = std::from_chars(maxExec.data(), maxExec.data() + maxExec.size(), seconds);
  if (!maxExec.empty() && ec == std::errc{} && end == maxExec.data() + maxExec.size() && seconds > 0)
    workload["spec"]["maximumExecutionTimeSeconds"] = seconds;
  if (priority) {
    workload["spec"]["priorityClassRef"] = {
        {"group", priority->group}, {"kind", priority->kind}, {"name", priority->name}};
    workload["spec"]["priority"] = priority->value;
  }
  return workload;
}

}  // namespace mka::integration
