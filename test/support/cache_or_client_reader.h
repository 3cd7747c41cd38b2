#pragma once
// An ObjectReader for unit tests that start only the informers whose lag they exercise: kinds
// with a cache are read from it, every other kind from the API server at the call (so a test
// that creates a PriorityClass or a Namespace sees it at once). Products read through
// controller::Manager::reader(), which has a cache for every kind it reads.
//
// Threads: as the reader it wraps (any thread).

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mka/controller/object_reader.h"

namespace mka::test {

class CacheOrClientReader final : public controller::ObjectReader {
 public:
  explicit CacheOrClientReader(kube::Client& client) : client_(client) {}
  // `informer` (borrowed, started by the test) answers for its kind.
  void add(const kube::Informer& informer) {
    cache_.add(informer);
    cached_.insert(informer.gvk());
  }

  std::optional<nlohmann::json> get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                    const std::string& name) const override {
    return of(gvk).get(gvk, namespace_, name);
  }
  std::optional<nlohmann::json> getByKey(const api::GroupVersionKind& gvk, const std::string& key) const override {
    return of(gvk).getByKey(gvk, key);
  }
  std::vector<nlohmann::json> list(const api::GroupVersionKind& gvk, const std::string& namespace_) const override {
    return of(gvk).list(gvk, namespace_);
  }
  void forEach(const api::GroupVersionKind& gvk, const std::string& namespace_,
               const std::function<void(const nlohmann::json& object)>& visit,
               const std::function<bool(const std::string& key)>& wanted = nullptr) const override {
    of(gvk).forEach(gvk, namespace_, visit, wanted);
  }

 private:
  const controller::ObjectReader& of(const api::GroupVersionKind& gvk) const {
    if (cached_.contains(gvk)) return cache_;
    return client_;
  }

  controller::CacheReader cache_;
  controller::ClientReader client_;
  std::set<api::GroupVersionKind> cached_;
};

}  // namespace mka::test
