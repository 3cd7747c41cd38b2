#include "mka/webhook/child_mutator.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "mka/api/pod_set_info.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/webhook/object_meta.h"

namespace mka::webhook {
namespace {

using nlohmann::json;

// The integrated framework whose children are of kind `gvk`, or nullptr.
const config::IntegratedFramework* parentOf(const config::Configuration& config, const api::GroupVersionKind& gvk) {
  for (const auto& f : config.integrations.frameworks)
    if (f.children && f.children->gvk == gvk) return &f;
  return nullptr;
}

void childSkipped(const AdmissionRequest& request, std::string_view why) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  log::debug("child not given an admission",
             {{"uid", request.uid}, {"object", request.objectKey()}, {"kind", request.kind.kind}, {"why", why}});
}

}  // namespace

AdmissionResponse mutateChild(const AdmissionRequest& request, const config::Configuration& config) {
  // A child's pod template is set once, when it is created; what runs it reads it from then on.
  if (request.operation != "CREATE" || !request.object.is_object()) return AdmissionResponse::allow();
  const auto* parent = parentOf(config, request.kind);
  if (parent == nullptr) {
    childSkipped(request, "kind is no integrated framework's children");
    return AdmissionResponse::allow();
  }
  const auto text = annotationOf(request.object, config::kChildPlacementAnnotation);
  if (!text || text->empty()) {
    childSkipped(request, "no placement annotation: its job was not started by Kueue, or its admission adds nothing");
    return AdmissionResponse::allow();
  }
  const config::ChildRule& rule = *parent->children;
  const std::string child = request.kind.kind + " " + request.objectKey();
  const std::string annotation = "annotation " + std::string(config::kChildPlacementAnnotation);
  const json placement = json::parse(text->begin(), text->end(), nullptr, false);
  const auto& nodeSelector = json_fields::objectMember(placement, "nodeSelector");
  const auto& tolerations = json_fields::arrayMember(placement, "tolerations");
  const bool wellFormed =
      placement.is_object() && (!placement.contains("nodeSelector") || placement["nodeSelector"].is_object()) &&
      (!placement.contains("tolerations") || placement["tolerations"].is_array()) &&
      std::all_of(nodeSelector.begin(), nodeSelector.end(), [](const json& v) { return v.is_string(); }) &&
      std::all_of(tolerations.begin(), tolerations.end(), [](const json& t) { return t.is_object(); });
  if (!wellFormed) {
    return AdmissionResponse::deny(child + ": " + annotation +
                                   " is not {\"nodeSelector\": {<key>: <value>}, \"tolerations\": [<toleration>]}: "
                                   "the start of its " +
                                   parent->gvk.kind + " writes it, and the " + parent->gvk.kind + " copies it to its " +
                                   rule.gvk.kind + "s; remove it from the " + parent->gvk.kind +
                                   " if it was set by hand");
  }

  json given = request.object;
  if (!rule.nodeSelector.empty() && !nodeSelector.empty()) {
    if (auto conflict = api::mergeMap(json_fields::fieldOrEmpty(given, rule.nodeSelector, json::object()), nodeSelector,
                                      "nodeSelector"))
      return AdmissionResponse::deny(
          child + ": " + rule.nodeSelector + ": invalid admission check PodSetUpdate: " + *conflict +
          ": its pods need the node selector of the admission (" + annotation + "); remove the key from what the " +
          parent->gvk.kind + " gives its " + rule.gvk.kind + "s, or queue it where no flavor has that node label");
  }
  if (!rule.tolerations.empty() && !tolerations.empty())
    api::appendTolerations(json_fields::fieldOrEmpty(given, rule.tolerations, json::array()), tolerations);
  if (given == request.object) {
    childSkipped(request, "it holds its admission's node selector and tolerations already");
    return AdmissionResponse::allow();
  }
  AdmissionResponse response;
  response.patch = json::diff(request.object, given);
  return response;
}

}  // namespace mka::webhook
