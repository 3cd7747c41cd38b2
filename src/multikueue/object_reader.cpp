#include "mka/multikueue/object_reader.h"

#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/kube/api_error.h"

namespace mka::multikueue {

using nlohmann::json;

const kube::Informer& CacheReader::cache(const api::GroupVersionKind& gvk) const {
  auto it = caches_.find(gvk);
  if (it == caches_.end()) throw Error("no informer cache for " + gvk.goString() + " (a wiring mistake)");
  return *it->second;
}

std::optional<json> CacheReader::get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                     const std::string& name) const {
  return cache(gvk).get(namespace_.empty() ? name : namespace_ + "/" + name);
}

std::vector<json> CacheReader::list(const api::GroupVersionKind& gvk, const std::string& namespace_) const {
  auto all = cache(gvk).list();
  if (namespace_.empty()) return all;
  std::vector<json> out;
  for (auto& object : all)
    if (json_fields::metadataString(object, "namespace") == namespace_) out.push_back(std::move(object));
  return out;
}

std::optional<json> ClientReader::get(const api::GroupVersionKind& gvk, const std::string& namespace_,
                                      const std::string& name) const {
  try {
    return client_.get(gvk, namespace_, name);
  } catch (const kube::ApiError& e) {
    if (e.reason() == kube::Reason::NotFound) return std::nullopt;
    throw;
  }
}

std::vector<json> ClientReader::list(const api::GroupVersionKind& gvk, const std::string& namespace_) const {
  return client_.listAll(gvk, namespace_);
}

}  // namespace mka::multikueue
