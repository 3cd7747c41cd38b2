#include "mka/kube/informer_pool.h"

#include <stdexcept>

namespace mka::kube {

InformerPool::~InformerPool() { stop(); }

Informer& InformerPool::informer(const api::GroupVersionKind& gvk, const InformerOptions& options) {
  if (options.transform) {
    throw std::logic_error("InformerPool: " + gvk.goString() +
                           ": a shared informer takes no transform (use withoutManagedFields)");
  }
  const Key key{gvk.group, gvk.version, gvk.kind, options.namespace_, options.labelSelector, options.fieldSelector};
  std::lock_guard lock(mutex_);
  const auto it = informers_.find(key);
  if (it != informers_.end()) {
    if (withoutManagedFields_.at(key) != options.withoutManagedFields) {
      throw std::logic_error("InformerPool: " + gvk.goString() +
                             ": asked for with and without withoutManagedFields; every reader must see the same "
                             "objects");
    }
    return *it->second;
  }
  withoutManagedFields_[key] = options.withoutManagedFields;
  return *informers_.emplace(key, std::make_unique<Informer>(client_, gvk, options)).first->second;
}

void InformerPool::stop() {
  std::vector<Informer*> all;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, informer] : informers_) all.push_back(informer.get());
  }
  for (auto* informer : all) informer->stop();
}

}  // namespace mka::kube
