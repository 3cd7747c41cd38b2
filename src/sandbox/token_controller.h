#pragma once
// Legacy ServiceAccount token Secrets, as a cluster serves them: kube-controller-manager's
// token controller and kube-apiserver's authenticator of their tokens. Tools that onboard a
// worker (`multikueue-adapter add-worker`, Kueue's create-multikueue-kubeconfig.sh) create a
// ServiceAccount, then a Secret of type kubernetes.io/service-account-token annotated
// kubernetes.io/service-account.name, and wait for the controller to fill it; the kubeconfig
// they build from it must then work against the cluster, and stop working once the Secret or
// the ServiceAccount is gone. The sandbox otherwise accepts only its one static token and
// client certificates, so this is what lets such a kubeconfig be tested end to end.
//
// As kube-controller-manager does it:
// - a token Secret whose ServiceAccount exists (and whose service-account.uid annotation, when
//   set, is that ServiceAccount's uid) gets data.token (a new random token), data["ca.crt"]
//   (the cluster's serving CA, PEM) and data.namespace, and the uid annotation;
// - a token Secret whose ServiceAccount does not exist (or has another uid) is deleted;
// - deleting a ServiceAccount deletes its token Secrets.
// As kube-apiserver does it: a token authenticates "system:serviceaccount:<ns>:<name>" while
// its Secret still holds it, neither is being deleted, and the ServiceAccount's uid is the one
// the Secret names; any other token is refused (401).
//
// Not emulated: JWTs (tokens are random strings, only ever compared), RBAC (the sandbox
// authorizes nothing), bound (projected) tokens and the TokenRequest API.
//
// Threads: ClusterApi calls observe() on request threads; one worker thread ("tokens-<cluster>")
// does the writes; authenticate() from any thread (the HTTP front's request threads). State is
// guarded by one mutex, never held while calling the API.

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox {

class ClusterApi;

inline constexpr std::string_view kServiceAccountTokenType = "kubernetes.io/service-account-token";
inline constexpr std::string_view kServiceAccountNameAnnotation = "kubernetes.io/service-account.name";
inline constexpr std::string_view kServiceAccountUidAnnotation = "kubernetes.io/service-account.uid";

class TokenController {
 public:
  // `caPem`: what data["ca.crt"] gets (the cluster's serving CA).
  TokenController(ClusterApi& api, std::string caPem);
  ~TokenController();  // stop()
  TokenController(const TokenController&) = delete;
  TokenController& operator=(const TokenController&) = delete;

  // start() also looks at the Secrets stored before it (a cluster started again).
  void start();
  void stop();  // drops what is queued

  // ClusterApi's write observer: a Secret or ServiceAccount was written or removed.
  void observe(const ResourceType& type, const nlohmann::json& object, bool removed);

  // The user a bearer token authenticates ("system:serviceaccount:<ns>:<name>"), or nullopt.
  std::optional<std::string> authenticate(const std::string& token) const;

  // Nothing queued or in progress (tests await it).
  bool idle() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::sandbox
