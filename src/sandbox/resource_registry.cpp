#include "mka/sandbox/resource_registry.h"

#include <mutex>
#include <stdexcept>

#include "builtin_resources.h"
#include "mka/sandbox/api_error.h"

namespace mka::sandbox {

std::string apiVersionOf(const std::string& group, const std::string& version) {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceType::qualifiedResource() const { return group.empty() ? plural : plural + "." + group; }

std::string ResourceType::qualifiedKind() const { return group.empty() ? kind : kind + "." + group; }

const ResourceVersionInfo* ResourceType::version(const std::string& name) const {
  for (const auto& v : versions)
    if (v.name == name && v.served) return &v;
  return nullptr;
}

const ResourceVersionInfo& ResourceType::storageVersion() const {
  for (const auto& v : versions)
    if (v.storage) return v;
  // parseCrd and the built-in table guarantee one; reaching here is a bug in the caller.
  throw std::logic_error("resource " + qualifiedResource() + " has no storage version");
}

ResourceRegistry::ResourceRegistry() {
  for (auto& type : detail::builtinResources()) {
    auto key = std::make_pair(type.group, type.plural);
    byGroupPlural_.emplace(std::move(key), std::make_shared<const ResourceType>(std::move(type)));
  }
}

ResourceTypePtr ResourceRegistry::find(const std::string& group, const std::string& version,
                                       const std::string& plural) const {
  std::shared_lock lock(mutex_);
  auto it = byGroupPlural_.find({group, plural});
  if (it == byGroupPlural_.end() || !it->second->version(version)) return nullptr;
  return it->second;
}

ResourceTypePtr ResourceRegistry::findKind(const std::string& group, const std::string& version,
                                           const std::string& kind) const {
  std::shared_lock lock(mutex_);
  for (const auto& [key, type] : byGroupPlural_) {
    if (key.first == group && type->kind == kind && type->version(version)) return type;
  }
  return nullptr;
}

std::vector<ResourceTypePtr> ResourceRegistry::snapshot() const {
  std::shared_lock lock(mutex_);
  std::vector<ResourceTypePtr> out;
  out.reserve(byGroupPlural_.size());
  for (const auto& [key, type] : byGroupPlural_) out.push_back(type);
  return out;
}

std::optional<ResourceType> ResourceRegistry::byResource(const std::string& group, const std::string& version,
                                                         const std::string& plural) const {
  auto type = find(group, version, plural);
  if (!type) return std::nullopt;
  return *type;
}

std::optional<ResourceType> ResourceRegistry::byKind(const std::string& group, const std::string& version,
                                                     const std::string& kind) const {
  auto type = findKind(group, version, kind);
  if (!type) return std::nullopt;
  return *type;
}

std::vector<ResourceType> ResourceRegistry::all() const {
  std::vector<ResourceType> out;
  for (const auto& type : snapshot()) out.push_back(*type);
  return out;
}

void ResourceRegistry::applyCrd(const nlohmann::json& crd) { applyCrd(readCrd(crd)); }

void ResourceRegistry::applyCrd(ResourceTypePtr type) {
  {
    std::unique_lock lock(mutex_);
    auto key = std::make_pair(type->group, type->plural);
    auto it = byGroupPlural_.find(key);
    if (it != byGroupPlural_.end() && it->second->builtin) {
      throw ApiError::invalid("CustomResourceDefinition.apiextensions.k8s.io", type->plural + "." + type->group,
                              {{"spec.names.plural",
                                "Invalid value: \"" + type->plural + "\": " + type->qualifiedResource() +
                                    " is served by the API server itself",
                                ""}});
    }
    byGroupPlural_.insert_or_assign(std::move(key), std::move(type));
  }
  std::lock_guard hashLock(openApiHashMutex_);
  openApiHashes_.clear();
}

void ResourceRegistry::removeCrd(const std::string& group, const std::string& plural) {
  {
    std::unique_lock lock(mutex_);
    auto it = byGroupPlural_.find({group, plural});
    if (it == byGroupPlural_.end() || it->second->builtin) return;
    byGroupPlural_.erase(it);
  }
  std::lock_guard hashLock(openApiHashMutex_);
  openApiHashes_.clear();
}

}  // namespace mka::sandbox
