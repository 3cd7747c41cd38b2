#pragma once
// Calls the admission webhooks registered in a cluster (MutatingWebhookConfiguration,
// ValidatingWebhookConfiguration objects in its store) the way kube-apiserver does:
// AdmissionReview v1 over HTTPS verified with the webhook's caBundle, rules (operations,
// apiGroups, apiVersions, resources incl. "*" and "<plural>/status", scope), namespaceSelector
// (matched against the Namespace object's labels), objectSelector (old and new object),
// matchConditions (CEL over object, oldObject and request; a failed evaluation refused with 403
// under Fail, skipped under Ignore), matchPolicy, timeoutSeconds, failurePolicy (Fail rejects, Ignore skips),
// sideEffects/dryRun, mutating webhooks in order with their JSONPatch applied, then validating webhooks. Denials become
// kube-apiserver's error: `admission webhook "<name>" denied the request: <msg>` with the webhook's status code; a
// failing call under Fail: 500 InternalError `failed calling webhook "<name>": ...`.
//
// Threads: any request thread; holds no state between calls but the resolver.

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/object_store.h"
#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox {

// Maps a webhook's `clientConfig.service` {namespace, name, port} to a loopback address: there
// is no cluster network in the sandbox. Shared by the clusters of a Sandbox.
class ServiceResolver {
 public:
  // `host` must be an IP literal ("127.0.0.1", "::1"; "localhost" is read as 127.0.0.1): the
  // webhook client connects there while it verifies the certificate for `<name>.<ns>.svc`.
  void expose(const std::string& ns, const std::string& name, int servicePort, std::string host, int port);
  // "https://host:port" or nullopt when unknown.
  std::optional<std::string> resolve(const std::string& ns, const std::string& name, int servicePort) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, int>, std::pair<std::string, int>> endpoints_;
};

struct AdmissionAttributes {
  std::string operation;  // CREATE | UPDATE | DELETE
  const ResourceType* type = nullptr;
  std::string version;
  ResourceRef ref;
  nlohmann::json object;     // null on DELETE
  nlohmann::json oldObject;  // null on CREATE
  bool dryRun = false;
  RequestUser user;
};

class AdmissionChain {
 public:
  AdmissionChain(ObjectStore& store, const ServiceResolver& resolver);
  // Runs mutating then validating webhooks. Returns the (possibly mutated) object; throws
  // ApiError when a webhook denies or fails under failurePolicy Fail. The webhooks' `warnings`
  // are appended to `warnings` when given (kube-apiserver returns them as Warning headers).
  nlohmann::json admit(const AdmissionAttributes& attributes, std::vector<std::string>* warnings = nullptr);
  // Whether any mutating or validating webhook configuration exists (admit() is then a copy).
  bool hasWebhooks() const;

 private:
  ObjectStore& store_;
  const ServiceResolver& resolver_;
};

}  // namespace mka::sandbox
