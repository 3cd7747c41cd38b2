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
    if (it->second.withoutManagedFields != options.withoutManagedFields) {
      throw std::logic_error("InformerPool: " + gvk.goString() +
                             ": asked for with and without withoutManagedFields; every reader must see the same "
                             "objects");
    }
    return *it->second.informer;
  }
  auto& entry = informers_[key];
  entry = {options.withoutManagedFields, std::make_unique<Informer>(client_, gvk, options)};
  return *entry.informer;
}

void InformerPool::stop() {
  std::vector<Informer*> all;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, entry] : informers_) all.push_back(entry.informer.get());
  }
  for (auto* informer : all) informer->stop();
}

}  // namespace mka::kube
