#include "mka/multikueue/events.h"

#include <optional>
#include <random>

#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/kube/api_error.h"
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
  const std::string truncated = truncateMessage(message, 1024);
  std::string key = json_fields::stringMember(meta, "uid");
  if (key.empty()) key = ns + "/" + name;
  key.append(1, '\0').append(type).append(1, '\0').append(reason).append(1, '\0').append(truncated);
  std::optional<Written> repeat;
  {
    std::lock_guard lock(mutex_);
    if (auto it = written_.find(key); it != written_.end()) {
      ++it->second.count;
      repeat = it->second;
    }
  }
  if (repeat) {
    try {
      client_.patch({"", "v1", "Event"}, repeat->ns, repeat->name, kube::PatchType::Merge,
                    {{"count", repeat->count}, {"lastTimestamp", now}}, {.answer = kube::WriteOptions::Answer::None});
      return;
    } catch (const kube::ApiError& e) {
      if (e.reason() != kube::Reason::NotFound) {
        log::warn("event not recorded", {{"object", ns + "/" + name}, {"reason", reason}, {"error", e.what()}});
        return;
      }
      // Expired (events live an hour) or deleted: written afresh below.
    } catch (const std::exception& e) {
      log::warn("event not recorded", {{"object", ns + "/" + name}, {"reason", reason}, {"error", e.what()}});
      return;
    }
  }
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
                {"message", truncated},
                {"source", {{"component", component_}}},
                {"reportingComponent", component_},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"count", 1}};
  try {
    client_.create(event, {.answer = kube::WriteOptions::Answer::None});
    std::lock_guard lock(mutex_);
    if (written_.size() >= kMaxRemembered) written_.clear();
    written_[key] = Written{ns, event["metadata"]["name"].get<std::string>(), 1};
  } catch (const std::exception& e) {
    log::warn("event not recorded", {{"object", ns + "/" + name}, {"reason", reason}, {"error", e.what()}});
  }
}

}  // namespace mka::multikueue
