#pragma once
// An ObjectReader over objects held in memory, for reconciler steps that only read (what a
// reconciler decides from the objects it reads, before it writes): a table case states its
// objects and asserts the decision without an API server, as controller-runtime's fake client
// lets Kueue's unit tests do. Objects are keyed by their apiVersion, kind, namespace and name.
//
// Threads: add() before the reads; reads from any thread.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/controller/object_reader.h"

namespace mka::test {

class MemoryReader final : public controller::ObjectReader {
 public:
  MemoryReader() = default;
  MemoryReader(std::initializer_list<nlohmann::json> objects) {
    for (const auto& o : objects) add(o);
  }
  // Adds or replaces `object` (it must carry apiVersion, kind and metadata.name).
  MemoryReader& add(const nlohmann::json& object) {
    const auto& meta = object.at("metadata");
    objects_[{object.at("apiVersion").get<std::string>(), object.at("kind").get<std::string>()}]
            [keyOf(meta.value("namespace", ""), meta.at("name").get<std::string>())] = object;
    return *this;
  }

  std::optional<nlohmann::json> get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                    const std::string& name) const override {
    return getByKey(gvk, keyOf(namespace_, name));
  }
  std::optional<nlohmann::json> getByKey(const api::GroupVersionKind& gvk, const std::string& key) const override {
    const auto* kind = of(gvk);
    if (kind == nullptr) return std::nullopt;
    const auto it = kind->find(key);
    if (it == kind->end()) return std::nullopt;
    return it->second;
  }
  std::vector<nlohmann::json> list(const api::GroupVersionKind& gvk, const std::string& namespace_) const override {
    std::vector<nlohmann::json> out;
    forEach(gvk, namespace_, [&](const nlohmann::json& o) { out.push_back(o); });
    return out;
  }
  void forEach(const api::GroupVersionKind& gvk, const std::string& namespace_,
               const std::function<void(const nlohmann::json& object)>& visit,
               const std::function<bool(const std::string& key)>& wanted = nullptr) const override {
    const auto* kind = of(gvk);
    if (kind == nullptr) return;
    for (const auto& [key, object] : *kind) {
      if (!namespace_.empty() && object["metadata"].value("namespace", "") != namespace_) continue;
      if (wanted && !wanted(key)) continue;
      visit(object);
    }
  }

 private:
  using Objects = std::map<std::string, nlohmann::json>;  // by key, so list() is in key order
  static std::string keyOf(const std::string& namespace_, const std::string& name) {
    return namespace_.empty() ? name : namespace_ + "/" + name;
  }
  const Objects* of(const api::GroupVersionKind& gvk) const {
    const auto it = objects_.find({gvk.apiVersion(), gvk.kind});
    return it == objects_.end() ? nullptr : &it->second;
  }
  std::map<std::pair<std::string, std::string>, Objects> objects_;
};

}  // namespace mka::test
