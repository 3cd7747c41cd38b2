#include "mka/controller/object_reader.h"

#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/kube/api_error.h"

namespace mka::controller {

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

std::optional<json> CacheReader::getByKey(const api::GroupVersionKind& gvk, const std::string& key) const {
  return cache(gvk).get(key);
}

std::vector<json> CacheReader::list(const api::GroupVersionKind& gvk, const std::string& namespace_) const {
  auto all = cache(gvk).list();
  if (namespace_.empty()) return all;
  std::vector<json> out;
  for (auto& object : all)
    if (json_fields::metadataString(object, "namespace") == namespace_) out.push_back(std::move(object));
  return out;
}

void CacheReader::forEach(const api::GroupVersionKind& gvk, const std::string& namespace_,
                          const std::function<void(const json& object)>& visit,
                          const std::function<bool(const std::string& key)>& wanted) const {
  const std::string prefix = namespace_.empty() ? "" : namespace_ + "/";
  cache(gvk).forEach(visit,
                     [&](const std::string& key) { return key.starts_with(prefix) && (!wanted || wanted(key)); });
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

std::optional<json> ClientReader::getByKey(const api::GroupVersionKind& gvk, const std::string& key) const {
  const auto [ns, name] = kube::Informer::splitKey(key);
  return get(gvk, std::string(ns), std::string(name));
}

std::vector<json> ClientReader::list(const api::GroupVersionKind& gvk, const std::string& namespace_) const {
  return client_.listAll(gvk, namespace_);
}

void ClientReader::forEach(const api::GroupVersionKind& gvk, const std::string& namespace_,
                           const std::function<void(const json& object)>& visit,
                           const std::function<bool(const std::string& key)>& wanted) const {
  for (const auto& object : list(gvk, namespace_))
    if (!wanted || wanted(kube::Informer::keyOf(object))) visit(object);
}

}  // namespace mka::controller
