#pragma once
// Where every reconciler reads the cluster's objects. In a running controller that is the
// informer caches (CacheReader, from controller::Manager::reader()): every reconcile runs after
// the caches have synced, and the informers' events bring a key back whenever what it read
// changes, so a cache that lags only delays a decision. A reconciler run on its own, without
// informers (a unit test), reads the API server (ClientReader). Writes always go through a
// kube::Client.
//
// Threads: both are safe to call from any thread (informer caches and clients are).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/api/gvk.h"
#include "mka/kube/client.h"
#include "mka/kube/informer.h"

namespace mka::controller {

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  // The object, or nullopt when there is none. `namespace_` is "" for cluster-scoped kinds.
  virtual std::optional<nlohmann::json> get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                            const std::string& name) const = 0;
  // The same by the key a work queue holds ("namespace/name", or the name): a cache looks it up
  // as it is, without splitting and joining it again.
  virtual std::optional<nlohmann::json> getByKey(const api::GroupVersionKind& gvk, const std::string& key) const = 0;
  // Every object of the kind (in `namespace_` for namespaced kinds, all with "").
  virtual std::vector<nlohmann::json> list(const api::GroupVersionKind& gvk, const std::string& namespace_) const = 0;
  // The objects list() returns, visited one at a time without holding them all. `wanted`, when
  // given, is asked about each key ("namespace/name", or the name) first: a cache skips the
  // objects it declines without decoding them.
  virtual void forEach(const api::GroupVersionKind& gvk, const std::string& namespace_,
                       const std::function<void(const nlohmann::json& object)>& visit,
                       const std::function<bool(const std::string& key)>& wanted = nullptr) const = 0;
};

// Reads informer caches, one per kind (borrowed; started and synced by the owner). Reading a
// kind without a cache is a wiring mistake: it throws mka::Error naming the kind.
class CacheReader final : public ObjectReader {
 public:
  void add(const kube::Informer& informer) { caches_[informer.gvk()] = &informer; }
  std::optional<nlohmann::json> get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                    const std::string& name) const override;
  std::optional<nlohmann::json> getByKey(const api::GroupVersionKind& gvk, const std::string& key) const override;
  std::vector<nlohmann::json> list(const api::GroupVersionKind& gvk, const std::string& namespace_) const override;
  void forEach(const api::GroupVersionKind& gvk, const std::string& namespace_,
               const std::function<void(const nlohmann::json& object)>& visit,
               const std::function<bool(const std::string& key)>& wanted = nullptr) const override;

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
  std::optional<nlohmann::json> getByKey(const api::GroupVersionKind& gvk, const std::string& key) const override;
  std::vector<nlohmann::json> list(const api::GroupVersionKind& gvk, const std::string& namespace_) const override;
  void forEach(const api::GroupVersionKind& gvk, const std::string& namespace_,
               const std::function<void(const nlohmann::json& object)>& visit,
               const std::function<bool(const std::string& key)>& wanted = nullptr) const override;

 private:
  kube::Client& client_;
};

}  // namespace mka::controller
