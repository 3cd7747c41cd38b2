#include "mka/sandbox/garbage_collector.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <variant>

#include "mka/common/log.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "task_loop.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

// How soon a deletion waiting for dependents (foreground, namespace content) looks again.
// The controller's own pace, as kube-controller-manager requeues; tests await idle().
constexpr std::chrono::milliseconds kRecheck{20};

struct OwnerGone {
  std::string uid;
  std::string policy;
};
struct OwnerDeleting {
  ObjectKey owner;
  std::string uid;
};
struct NamespaceGone {
  std::string name;
};
using Task = std::variant<OwnerGone, OwnerDeleting, NamespaceGone>;

std::string versionOf(const json& object) {
  const auto apiVersion = object.value("apiVersion", "");
  const auto slash = apiVersion.find('/');
  return slash == std::string::npos ? apiVersion : apiVersion.substr(slash + 1);
}

ResourceRef refOf(const ObjectKey& key, const json& object) {
  return {key.group, versionOf(object), key.plural, key.namespace_, key.name, ""};
}

}  // namespace

struct GarbageCollector::Impl {
  explicit Impl(ClusterApi& a)
      : api(a),
        loop(
            "gc-" + a.clusterName(), kRecheck,
            [this](const Task& task) {
              const bool on = enabled.load();
              return std::visit([&](const auto& t) { return handle(t, on); }, task);
            },
            [this](const std::exception& e) {
              log::warn("sandbox garbage collector retries", {{"cluster", api.clusterName()}, {"error", e.what()}});
            }) {}

  ClusterApi& api;
  std::atomic<bool> enabled{true};
  detail::TaskLoop<Task> loop;  // last: its thread stops before the members it uses go

  std::vector<std::pair<ObjectKey, json>> dependentsOf(const std::string& uid) const {
    return api.store().dependentsOf(uid);
  }

  // Drops the reference to `uid`; returns the references left.
  std::size_t dropReference(const ObjectKey& key, json object, const std::string& uid) {
    auto& refs = object["metadata"]["ownerReferences"];
    json kept = json::array();
    for (const auto& r : refs)
      if (!(r.is_object() && r.value("uid", "") == uid)) kept.push_back(r);
    const auto left = kept.size();
    if (kept.empty()) {
      object["metadata"].erase("ownerReferences");
    } else {
      refs = std::move(kept);
    }
    const auto ref = refOf(key, object);
    api.update(ref, std::move(object), WriteOptions{false, "garbage-collector", false, "", {}});
    return left;
  }

  void deleteObject(const ObjectKey& key, const json& object, const std::string& policy) {
    try {
      api.remove(refOf(key, object), DeleteOptions{policy, std::nullopt, std::nullopt, false, {}});
    } catch (const ApiError& e) {
      if (e.code() != 404) throw;
    }
  }

  // Returns true to be called again later.
  bool handle(const OwnerGone& task, bool on) {
    if (!on) return false;
    for (auto& [key, object] : dependentsOf(task.uid)) {
      if (task.policy == "Orphan") {
        dropReference(key, object, task.uid);
        continue;
      }
      const auto refs = object["metadata"]["ownerReferences"].size();
      if (refs <= 1) {
        deleteObject(key, object, "Background");
      } else {
        dropReference(key, object, task.uid);
      }
    }
    return false;
  }

  bool handle(const OwnerDeleting& task, bool on) {
    if (!on) return false;
    auto owner = api.store().get(task.owner);
    if (!owner || owner->at("metadata").value("uid", "") != task.uid) return false;
    auto finalizers = owner->at("metadata").value("finalizers", json::array());
    const bool orphan = std::find(finalizers.begin(), finalizers.end(), "orphan") != finalizers.end();
    const bool foreground = std::find(finalizers.begin(), finalizers.end(), "foregroundDeletion") != finalizers.end();
    auto dependents = dependentsOf(task.uid);
    if (orphan) {
      for (auto& [key, object] : dependents) dropReference(key, object, task.uid);
    } else if (foreground) {
      for (auto& [key, object] : dependents) {
        if (object["metadata"].contains("deletionTimestamp")) continue;
        deleteObject(key, object, "Foreground");
      }
      if (!dependentsOf(task.uid).empty()) return true;  // wait until they are gone
    } else {
      return false;
    }
    json next = *owner;
    json kept = json::array();
    for (const auto& f : finalizers)
      if (f != "orphan" && f != "foregroundDeletion") kept.push_back(f);
    next["metadata"]["finalizers"] = kept;
    const auto ref = refOf(task.owner, next);
    api.update(ref, std::move(next), WriteOptions{false, "garbage-collector", false, "", {}});
    return false;
  }

  bool handle(const NamespaceGone& task, bool) {
    bool remaining = false;
    for (auto& [key, object] : api.store().snapshot()) {
      if (key.namespace_ != task.name) continue;
      remaining = true;
      if (!object["metadata"].contains("deletionTimestamp")) deleteObject(key, object, "Background");
    }
    if (remaining) return true;
    const ObjectKey nsKey{"", "namespaces", "", task.name};
    auto ns = api.store().get(nsKey);
    if (!ns || !ns->at("metadata").contains("deletionTimestamp")) return false;
    if (!ns->at("metadata").value("finalizers", json::array()).empty()) return true;  // someone else's finalizer
    try {
      api.store().remove(nsKey, std::stoull(ns->at("metadata").value("resourceVersion", "0")));
    } catch (const ApiError& e) {
      if (e.code() == 404) return false;
      return true;
    }
    return false;
  }
};

GarbageCollector::GarbageCollector(ClusterApi& api) : impl_(std::make_unique<Impl>(api)) {}

GarbageCollector::~GarbageCollector() { stop(); }

void GarbageCollector::start() { impl_->loop.start(); }

void GarbageCollector::stop() { impl_->loop.stop(); }

void GarbageCollector::setEnabled(bool enabled) { impl_->enabled = enabled; }

bool GarbageCollector::enabled() const { return impl_->enabled; }

void GarbageCollector::ownerDeleted(const std::string& uid, const std::string& propagationPolicy) {
  impl_->loop.push(OwnerGone{uid, propagationPolicy});
}

void GarbageCollector::ownerDeleting(const ObjectKey& owner, const std::string& uid) {
  impl_->loop.push(OwnerDeleting{owner, uid});
}

void GarbageCollector::namespaceDeleted(const std::string& name) { impl_->loop.push(NamespaceGone{name}); }

bool GarbageCollector::idle() const { return impl_->loop.idle(); }

}  // namespace mka::sandbox
