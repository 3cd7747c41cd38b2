#include "mka/controller/event_recorder.h"

#include <cstring>
#include <optional>
#include <random>

#include <openssl/evp.h>

#include "mka/api/conditions.h"
#include "mka/api/kinds.h"
#include "mka/common/json_fields.h"
#include "mka/common/log.h"
#include "mka/kube/api_error.h"

namespace mka::controller {

using nlohmann::json;

std::size_t EventRecorder::DigestHash::operator()(const Digest& digest) const noexcept {
  std::size_t hash;
  std::memcpy(&hash, digest.data(), sizeof hash);  // a digest's bytes are uniform already
  return hash;
}

EventRecorder::Digest EventRecorder::digestOf(std::string_view identity) {
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(identity.data(), identity.size(), full, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 digest failed (OpenSSL EVP_Digest): is OpenSSL's default provider available?");
  Digest digest;
  std::memcpy(digest.data(), full, digest.size());
  return digest;
}

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
  const auto eventName = [&name](std::uint64_t suffix) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(suffix));
    return name + "." + hex;
  };
  const std::uint64_t suffix = random();
  const auto now = toRfc3339(clock_.now());
  const std::string truncated = api::truncateMessage(message, 1024);
  std::string key = json_fields::stringMember(meta, "uid");
  if (key.empty()) key = ns + "/" + name;
  key.append(1, '\0').append(type).append(1, '\0').append(reason).append(1, '\0').append(truncated);
  Digest digest;
  try {
    digest = digestOf(key);
  } catch (const std::exception& e) {
    log::warn("event not recorded", {{"object", ns + "/" + name}, {"reason", reason}, {"error", e.what()}});
    return;
  }
  std::optional<Written> repeat;
  {
    std::lock_guard lock(mutex_);
    if (auto it = written_.find(digest); it != written_.end()) {
      ++it->second.count;
      repeat = it->second;
    }
  }
  if (repeat) {
    try {
      client_.patch({"", "v1", "Event"}, ns, eventName(repeat->suffix), kube::PatchType::Merge,
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
                {"metadata", {{"name", eventName(suffix)}, {"namespace", ns}}},
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
    written_[digest] = Written{suffix, 1};
  } catch (const std::exception& e) {
    log::warn("event not recorded", {{"object", ns + "/" + name}, {"reason", reason}, {"error", e.what()}});
  }
}

}  // namespace mka::controller
