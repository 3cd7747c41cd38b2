#include "mka/multikueue/adapter.h"

namespace mka::multikueue {

Adapters::Adapters(std::vector<std::shared_ptr<const Adapter>> adapters) : adapters_(std::move(adapters)) {}

const Adapter* Adapters::find(const api::GroupVersionKind& gvk) const {
  for (const auto& adapter : adapters_)
    if (adapter->kind().is(gvk)) return adapter.get();
  return nullptr;
}

}  // namespace mka::multikueue
