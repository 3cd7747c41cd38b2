#include "mka/deploy/webhook_conditions.h"

#include <vector>

#include "mka/api/kueue.h"
#include "mka/common/strings.h"

namespace mka::deploy {
namespace {

// A CEL string literal, in double quotes: YAML then quotes the expression without doubling them.
std::string celString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string joinedLiterals(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + celString(item);
  return "[" + out + "]";
}

// The value of `variable`.metadata.<map>[k], null when absent (a removed label is a change).
std::string entryOf(std::string_view variable, std::string_view map) {
  const std::string at = std::string(variable) + ".metadata." + std::string(map);
  return "(has(" + at + ") && k in " + at + " ? " + at + "[k] : null)";
}

// True when one of `keys` of metadata.<map> differs between the old and the new object.
std::string entriesChanged(std::string_view map, const std::vector<std::string>& keys) {
  return joinedLiterals(keys) + ".exists(k, " + entryOf("object", map) + " != " + entryOf("oldObject", map) + ")";
}

// The value at the dotted `path` of `variable`, null when a step is absent. Index syntax, so
// that a segment that is not a CEL identifier (or is a reserved word) still reads.
std::string valueAt(std::string_view variable, const std::string& path) {
  std::string condition;
  std::string at(variable);
  for (const auto& segment : strings::split(path, '.')) {
    condition += (condition.empty() ? "" : " && ") + celString(segment) + " in " + at;
    at += "[" + celString(segment) + "]";
  }
  return "(" + condition + " ? " + at + " : null)";
}

std::string markerChanged(const config::ManagedByLocation& where) {
  if (where.type == config::ManagedByLocation::Type::Label) return entriesChanged("labels", {where.labelKey});
  return valueAt("object", where.path) + " != " + valueAt("oldObject", where.path);
}

}  // namespace

std::string checkedFieldsChangedExpression(const config::Configuration& cfg) {
  std::vector<std::string> terms = {
      "request.operation != \"UPDATE\"",
      entriesChanged("labels", {std::string(api::kQueueNameLabel), std::string(api::kPrebuiltWorkloadNameKey),
                                std::string(api::kMaxExecTimeLabel), std::string(api::kPriorityClassLabel)}),
      entriesChanged("annotations", {std::string(api::kPrebuiltWorkloadNameKey)}),
  };
  // The marker is checked for dispatched kinds only; kinds that keep it in the same place share
  // a term, in configuration order.
  std::vector<std::pair<config::ManagedByLocation, std::vector<std::string>>> byPlace;
  for (const auto& f : cfg.multiKueue.externalFrameworks) {
    const std::string kind = f.gvk.group + "/" + f.gvk.kind;
    auto it = std::find_if(byPlace.begin(), byPlace.end(), [&](const auto& p) { return p.first == f.managedBy; });
    if (it == byPlace.end()) {
      byPlace.push_back({f.managedBy, {}});
      it = std::prev(byPlace.end());
    }
    if (std::find(it->second.begin(), it->second.end(), kind) == it->second.end()) it->second.push_back(kind);
  }
  for (const auto& [where, kinds] : byPlace) {
    terms.push_back("(request.kind.group + \"/\" + request.kind.kind in " + joinedLiterals(kinds) + " && " +
                    markerChanged(where) + ")");
  }
  std::string out;
  for (const auto& term : terms) out += (out.empty() ? "" : " || ") + term;
  return out;
}

nlohmann::ordered_json childMatchConditions() {
  const std::string annotations = "object.metadata.annotations";
  return nlohmann::ordered_json::array(
      {{{"name", std::string(kCarriesPlacementCondition)},
        {"expression",
         "has(" + annotations + ") && " + celString(config::kChildPlacementAnnotation) + " in " + annotations}}});
}

nlohmann::ordered_json validateMatchConditions(const config::Configuration& cfg) {
  return nlohmann::ordered_json::array(
      {{{"name", std::string(kCheckedFieldsCondition)}, {"expression", checkedFieldsChangedExpression(cfg)}}});
}

}  // namespace mka::deploy
