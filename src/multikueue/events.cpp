#include "mka/multikueue/events.h"

#include <spdlog/spdlog.h>

#include <random>

#include "mka/common/json_fields.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/workload_status.h"

namespace mka::multikueue {

using nlohmann::json;

EventRecorder::EventRecorder(kube::Client& client, const Clock& clock, std::string component)
    : client_(client), clock_(clock), component_(std::move(component)) {}

void EventRecorder::record(const json& object, std::string_view type, std::string_view reason,
                           std::string_view message) {
  const auto& meta = json_fields::objectMember(object, "metadata");
  const std::string name = json_fields::stringMember(meta, "name");
  std::string ns = json_fields::stringMember(meta, "namespace");
  if (ns.empty()) ns = "default";
  // client-go names events "<object>.<hex of the time>"; a random suffix keeps names unique
  // when several events about one object land in the same nanosecond.
  thread_local std::mt19937_64 random{std::random_device{}()};
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(random()));
  const auto now = toRfc3339(clock_.now());
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name + "." + suffix}, {"namespace", ns}}},
                {"involvedObject",
                 {{"apiVersion", object.value("apiVersion", "")},
                  {"kind", object.value("kind", "")},
                  {"name", name},
                  {"namespace", json_fields::stringMember(meta, "namespace")},
                  {"uid", json_fields::stringMember(meta, "uid")},
                  {"resourceVersion", json_fields::stringMember(meta, "resourceVersion")}}},
                {"type", type},
                {"reason", reason},
                {"action", reason},
                {"message", truncateMessage(message, 1024)},
                {"source", {{"component", component_}}},
                {"reportingComponent", component_},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"count", 1}};
  try {
    client_.create(event, {.answer = kube::WriteOptions::Answer::None});
  } catch (const std::exception& e) {
    spdlog::warn("event not recorded object={}/{} reason={} error=\"{}\"", ns, name, reason, e.what());
  }
}

}  // namespace mka::multikueue
