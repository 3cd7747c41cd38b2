#pragma once
// Where the MultiKueue reconcilers read the manager's objects. In the dispatch loop that is the
// informer caches (CacheReader): every reconcile runs after the caches have synced, and the
// informers' events bring a key back whenever what it read changes, so a cache that lags only
// delays a decision. A reconciler run on its own, without the dispatch loop's informers (its
// unit tests), reads the API server (ClientReader). Writes always go through a kube::Client.
//
// Threads: both are safe to call from any thread (informer caches and clients are).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/kube/client.h"
#include "mka/kube/informer.h"

namespace mka::multikueue {

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  // The object, or nullopt when there is none. `namespace_` is "" for cluster-scoped kinds.
  virtual std::optional<nlohmann::json> get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                            const std::string& name) const = 0;
  // Every object of the kind (in `namespace_` for namespaced kinds, all with "").
  virtual std::vector<nlohmann::json> list(const api::GroupVersionKind& gvk, const std::string& namespace_) const = 0;
};

// Reads informer caches, one per kind (borrowed; started and synced by the owner). Reading a
// kind without a cache is a wiring mistake: it throws mka::Error naming the kind.
class CacheReader final : public ObjectReader {
 public:
  void add(const kube::Informer& informer) { caches_[informer.gvk()] = &informer; }
  std::optional<nlohmann::json> get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                    const std::string& name) const override;
  std::vector<nlohmann::json> list(const api::GroupVersionKind& gvk, const std::string& namespace_) const override;

 private:
  const kube::Informer& cache(const api::GroupVersionKind& gvk) const;
  std::map<api::GroupVersionKind, const kube::Informer*> caches_;
};

// Reads through a client: a GET or a LIST per call.
class ClientReader final : public ObjectReader {
 public:
  explicit ClientReader(kube::Client& client) : client_(client) {}
  std::optional<nlohmann::json> get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                    const std::string& name) const override;
  std::vector<nlohmann::json> list(const api::GroupVersionKind& gvk, const std::string& namespace_) const override;

 private:
  kube::Client& client_;
};

}  // namespace mka::multikueue
