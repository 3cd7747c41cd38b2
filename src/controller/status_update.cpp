#include "mka/controller/status_update.h"

#include "mka/common/clock.h"
#include "mka/common/json_fields.h"
#include "mka/kube/api_error.h"

namespace mka::controller {

using nlohmann::json;

std::string apiErrorMessage(const kube::ApiError& error) {
  const auto& status = error.status();
  if (status.is_object() && status.contains("message") && status["message"].is_string())
    return status["message"].get<std::string>();
  return error.what();
}

std::optional<json> updateStatus(kube::Client& client, const json& current, const std::function<bool(json&)>& mutate,
                                 std::string_view fieldManager) {
  json object = current;
  const auto gvk = api::GroupVersionKind::fromApiVersion(current.value("apiVersion", ""), current.value("kind", ""));
  const auto ns = json_fields::metadataString(current, "namespace");
  const auto name = json_fields::metadataString(current, "name");
  try {
    for (int attempt = 1;; ++attempt) {
      if (!mutate(object)) return std::nullopt;
      try {
        return client.update(object, {.fieldManager = std::string(fieldManager),
                                      .subresource = "status",
                                      .answer = kube::WriteOptions::Answer::Metadata});
      } catch (const kube::ApiError& e) {
        if (e.reason() != kube::Reason::Conflict || attempt >= 5) throw;
      }
      object = client.get(gvk, ns, name);
    }
  } catch (const kube::ApiError& e) {
    if (e.reason() == kube::Reason::NotFound) return std::nullopt;
    throw;
  }
}

bool writeCondition(kube::Client& client, const json& current, const api::Condition& condition, const Clock& clock) {
  return updateStatus(client, current, [&](json& object) { return api::setCondition(object, condition, clock.now()); })
      .has_value();
}

}  // namespace mka::controller
