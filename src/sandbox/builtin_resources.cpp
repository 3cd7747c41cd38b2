#include "builtin_resources.h"

#include <tuple>

#include "mka/common/strings.h"

namespace mka::sandbox::detail {
namespace {

ResourceType builtin(std::string group, std::string plural, std::string singular, std::string kind, bool namespaced,
                     std::vector<std::string> shortNames = {}, std::vector<std::string> categories = {},
                     bool hasStatus = false) {
  ResourceType t;
  t.group = std::move(group);
  t.plural = std::move(plural);
  t.singular = std::move(singular);
  t.kind = kind;
  t.listKind = kind + "List";
  t.namespaced = namespaced;
  t.shortNames = std::move(shortNames);
  t.categories = std::move(categories);
  t.builtin = true;
  ResourceVersionInfo v1;
  v1.name = "v1";
  v1.storage = true;
  v1.schema = nullptr;
  v1.hasStatus = hasStatus;
  t.versions.push_back(std::move(v1));
  return t;
}

}  // namespace

std::vector<ResourceType> builtinResources() {
  std::vector<ResourceType> types;
  auto namespaces = builtin("", "namespaces", "namespace", "Namespace", false, {"ns"}, {}, true);
  // kube-apiserver offers no deletecollection on namespaces.
  namespaces.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  types.push_back(std::move(namespaces));
  types.push_back(builtin("", "configmaps", "configmap", "ConfigMap", true, {"cm"}));
  types.push_back(builtin("", "events", "event", "Event", true, {"ev"}));
  // Pods are stored and served for the framework stand-ins that create them (Tekton's TaskRun
  // controller); no kubelet or scheduler runs them, and no schema types them.
  types.push_back(builtin("", "pods", "pod", "Pod", true, {"po"}, {"all"}, true));
  types.push_back(builtin("", "secrets", "secret", "Secret", true));
  types.push_back(builtin("", "serviceaccounts", "serviceaccount", "ServiceAccount", true, {"sa"}));
  types.push_back(builtin("", "services", "service", "Service", true, {"svc"}, {"all"}, true));
  types.push_back(builtin("events.k8s.io", "events", "event", "Event", true, {"ev"}));
  types.push_back(builtin("coordination.k8s.io", "leases", "lease", "Lease", true));
  types.push_back(builtin("scheduling.k8s.io", "priorityclasses", "priorityclass", "PriorityClass", false, {"pc"}));
  // RBAC objects are stored and served (`add-worker` writes a worker's ClusterRole and binding);
  // the sandbox authorizes nothing by them.
  types.push_back(builtin("rbac.authorization.k8s.io", "clusterroles", "clusterrole", "ClusterRole", false));
  types.push_back(
      builtin("rbac.authorization.k8s.io", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false));
  types.push_back(builtin("rbac.authorization.k8s.io", "roles", "role", "Role", true));
  types.push_back(builtin("rbac.authorization.k8s.io", "rolebindings", "rolebinding", "RoleBinding", true));
  // Answered, never stored (reviews.h): what delegating authentication and authorization ask.
  for (auto [group, plural, kind] :
       {std::tuple{"authentication.k8s.io", "tokenreviews", "TokenReview"},
        std::tuple{"authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview"}}) {
    auto review = builtin(group, plural, strings::toLower(kind), kind, false);
    review.verbs = {"create"};
    types.push_back(std::move(review));
  }
  types.push_back(builtin("apiextensions.k8s.io", "customresourcedefinitions", "customresourcedefinition",
                          "CustomResourceDefinition", false, {"crd", "crds"}, {"api-extensions"}, true));
  types.push_back(builtin("admissionregistration.k8s.io", "mutatingwebhookconfigurations",
                          "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", false, {},
                          {"api-extensions"}));
  types.push_back(builtin("admissionregistration.k8s.io", "validatingwebhookconfigurations",
                          "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", false, {},
                          {"api-extensions"}));
  return types;
}

}  // namespace mka::sandbox::detail
