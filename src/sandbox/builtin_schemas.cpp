// OpenAPI schemas of the built-in kinds, with the fields kube-apiserver v1.32 publishes for them.
// kubectl computes its client-side strategic merge patches from these (looking every field of a
// manifest up by name, with x-kubernetes-patch-merge-key/-strategy for lists), so a kind whose
// schema lacks a field a user may write would make `kubectl apply` warn: complete or left out.

#include "builtin_resources.h"

namespace mka::sandbox::detail {
namespace {

using nlohmann::json;

const std::string kMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.";
const std::string kCore = "io.k8s.api.core.v1.";
const std::string kEvents = "io.k8s.api.events.v1.";
const std::string kCoordination = "io.k8s.api.coordination.v1.";
const std::string kScheduling = "io.k8s.api.scheduling.v1.";
const std::string kAdmission = "io.k8s.api.admissionregistration.v1.";
const std::string kRbac = "io.k8s.api.rbac.v1.";
const std::string kAuthentication = "io.k8s.api.authentication.v1.";
const std::string kAuthorization = "io.k8s.api.authorization.v1.";
const std::string kExtensions = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.";

json typed(const char* type, const char* format = nullptr) {
  json s = {{"type", type}};
  if (format) s["format"] = format;
  return s;
}
json str() { return typed("string"); }
json boolean() { return typed("boolean"); }
json int32() { return typed("integer", "int32"); }
json int64() { return typed("integer", "int64"); }
json schemaRef(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }
json time() { return schemaRef(kMeta + "Time"); }
json arrayOf(json items, const char* listType = "atomic") {
  return {{"type", "array"}, {"items", std::move(items)}, {"x-kubernetes-list-type", listType}};
}
json strings() { return arrayOf(str()); }
json stringMap() { return {{"type", "object"}, {"additionalProperties", str()}}; }
// A list that strategic merge patches and server-side apply merge by `keys` (the first is the
// patch merge key).
json mapList(json items, std::vector<std::string> keys) {
  json s = arrayOf(std::move(items), "map");
  s["x-kubernetes-list-map-keys"] = keys;
  s["x-kubernetes-patch-merge-key"] = keys.front();
  s["x-kubernetes-patch-strategy"] = "merge";
  return s;
}
json object(json properties, std::vector<std::string> required = {}) {
  json s = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) s["required"] = required;
  return s;
}
json gvk(const std::string& group, const std::string& version, const std::string& kind) {
  return json::array({{{"group", group}, {"kind", kind}, {"version", version}}});
}

json kindSchema(const std::string& group, const std::string& kind, json properties) {
  properties["apiVersion"] = str();
  properties["kind"] = str();
  properties["metadata"] = schemaRef(kMeta + "ObjectMeta");
  json s = object(std::move(properties));
  s["x-kubernetes-group-version-kind"] = gvk(group, "v1", kind);
  return s;
}
json listSchema(const std::string& group, const std::string& kind, const std::string& itemSchema) {
  json s = object({{"apiVersion", str()},
                   {"kind", str()},
                   {"metadata", schemaRef(kMeta + "ListMeta")},
                   {"items", {{"type", "array"}, {"items", schemaRef(itemSchema)}}}},
                  {"items"});
  s["x-kubernetes-group-version-kind"] = gvk(group, "v1", kind + "List");
  return s;
}

void addKind(json& schemas, const std::string& prefix, const std::string& group, const std::string& kind,
             json properties) {
  schemas[prefix + kind] = kindSchema(group, kind, std::move(properties));
  schemas[prefix + kind + "List"] = listSchema(group, kind, prefix + kind);
}

void addMeta(json& s) {
  s[kMeta + "Time"] = typed("string", "date-time");
  s[kMeta + "MicroTime"] = typed("string", "date-time");
  s[kMeta + "FieldsV1"] = {{"type", "object"}, {"description", "FieldsV1 stores a set of fields in a trie."}};
  s[kMeta + "Patch"] = {
      {"type", "object"},
      {"description", "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}};
  s[kMeta + "OwnerReference"] = object({{"apiVersion", str()},
                                        {"blockOwnerDeletion", boolean()},
                                        {"controller", boolean()},
                                        {"kind", str()},
                                        {"name", str()},
                                        {"uid", str()}},
                                       {"apiVersion", "kind", "name", "uid"});
  s[kMeta + "OwnerReference"]["x-kubernetes-map-type"] = "atomic";
  s[kMeta + "ManagedFieldsEntry"] = object({{"apiVersion", str()},
                                            {"fieldsType", str()},
                                            {"fieldsV1", schemaRef(kMeta + "FieldsV1")},
                                            {"manager", str()},
                                            {"operation", str()},
                                            {"subresource", str()},
                                            {"time", time()}});
  json finalizers = strings();
  finalizers["x-kubernetes-list-type"] = "set";
  finalizers["x-kubernetes-patch-strategy"] = "merge";
  s[kMeta + "ObjectMeta"] = object({{"annotations", stringMap()},
                                    {"creationTimestamp", time()},
                                    {"deletionGracePeriodSeconds", int64()},
                                    {"deletionTimestamp", time()},
                                    {"finalizers", finalizers},
                                    {"generateName", str()},
                                    {"generation", int64()},
                                    {"labels", stringMap()},
                                    {"managedFields", arrayOf(schemaRef(kMeta + "ManagedFieldsEntry"))},
                                    {"name", str()},
                                    {"namespace", str()},
                                    {"ownerReferences", mapList(schemaRef(kMeta + "OwnerReference"), {"uid"})},
                                    {"resourceVersion", str()},
                                    {"selfLink", str()},
                                    {"uid", str()}});
  s[kMeta + "ListMeta"] =
      object({{"continue", str()}, {"remainingItemCount", int64()}, {"resourceVersion", str()}, {"selfLink", str()}});
  s[kMeta + "Condition"] = object({{"lastTransitionTime", time()},
                                   {"message", str()},
                                   {"observedGeneration", int64()},
                                   {"reason", str()},
                                   {"status", str()},
                                   {"type", str()}},
                                  {"type", "status", "lastTransitionTime", "reason", "message"});
  s[kMeta + "LabelSelectorRequirement"] =
      object({{"key", str()}, {"operator", str()}, {"values", strings()}}, {"key", "operator"});
  s[kMeta + "LabelSelector"] = object(
      {{"matchExpressions", arrayOf(schemaRef(kMeta + "LabelSelectorRequirement"))}, {"matchLabels", stringMap()}});
  s[kMeta + "LabelSelector"]["x-kubernetes-map-type"] = "atomic";
  s[kMeta + "StatusCause"] = object({{"field", str()}, {"message", str()}, {"reason", str()}});
  s[kMeta + "StatusDetails"] = object({{"causes", arrayOf(schemaRef(kMeta + "StatusCause"))},
                                       {"group", str()},
                                       {"kind", str()},
                                       {"name", str()},
                                       {"retryAfterSeconds", int32()},
                                       {"uid", str()}});
  s[kMeta + "Status"] = object({{"apiVersion", str()},
                                {"code", int32()},
                                {"details", schemaRef(kMeta + "StatusDetails")},
                                {"kind", str()},
                                {"message", str()},
                                {"metadata", schemaRef(kMeta + "ListMeta")},
                                {"reason", str()},
                                {"status", str()}});
  s[kMeta + "Status"]["x-kubernetes-group-version-kind"] = gvk("", "v1", "Status");
  s[kMeta + "Preconditions"] = object({{"resourceVersion", str()}, {"uid", str()}});
  s[kMeta + "DeleteOptions"] = object({{"apiVersion", str()},
                                       {"dryRun", strings()},
                                       {"gracePeriodSeconds", int64()},
                                       {"kind", str()},
                                       {"orphanDependents", boolean()},
                                       {"preconditions", schemaRef(kMeta + "Preconditions")},
                                       {"propagationPolicy", str()}});
  s[kMeta + "DeleteOptions"]["x-kubernetes-group-version-kind"] = gvk("", "v1", "DeleteOptions");
}

void addCore(json& s) {
  s[kCore + "ObjectReference"] = object({{"apiVersion", str()},
                                         {"fieldPath", str()},
                                         {"kind", str()},
                                         {"name", str()},
                                         {"namespace", str()},
                                         {"resourceVersion", str()},
                                         {"uid", str()}});
  s[kCore + "ObjectReference"]["x-kubernetes-map-type"] = "atomic";
  s[kCore + "LocalObjectReference"] = object({{"name", str()}});
  s[kCore + "LocalObjectReference"]["x-kubernetes-map-type"] = "atomic";
  s[kCore + "EventSource"] = object({{"component", str()}, {"host", str()}});
  s[kCore + "EventSeries"] = object({{"count", int32()}, {"lastObservedTime", schemaRef(kMeta + "MicroTime")}});

  addKind(s, kCore, "", "ConfigMap",
          {{"binaryData", {{"type", "object"}, {"additionalProperties", typed("string", "byte")}}},
           {"data", stringMap()},
           {"immutable", boolean()}});
  addKind(s, kCore, "", "Secret",
          {{"data", {{"type", "object"}, {"additionalProperties", typed("string", "byte")}}},
           {"immutable", boolean()},
           {"stringData", stringMap()},
           {"type", str()}});

  s[kCore + "NamespaceCondition"] = object(
      {{"lastTransitionTime", time()}, {"message", str()}, {"reason", str()}, {"status", str()}, {"type", str()}},
      {"type", "status"});
  s[kCore + "NamespaceSpec"] = object({{"finalizers", strings()}});
  s[kCore + "NamespaceStatus"] =
      object({{"conditions", mapList(schemaRef(kCore + "NamespaceCondition"), {"type"})}, {"phase", str()}});
  addKind(s, kCore, "", "Namespace",
          {{"spec", schemaRef(kCore + "NamespaceSpec")}, {"status", schemaRef(kCore + "NamespaceStatus")}});

  json secrets = arrayOf(schemaRef(kCore + "ObjectReference"));
  secrets["x-kubernetes-patch-merge-key"] = "name";
  secrets["x-kubernetes-patch-strategy"] = "merge";
  addKind(s, kCore, "", "ServiceAccount",
          {{"automountServiceAccountToken", boolean()},
           {"imagePullSecrets", arrayOf(schemaRef(kCore + "LocalObjectReference"))},
           {"secrets", secrets}});

  addKind(s, kCore, "", "Event",
          {{"action", str()},
           {"count", int32()},
           {"eventTime", schemaRef(kMeta + "MicroTime")},
           {"firstTimestamp", time()},
           {"involvedObject", schemaRef(kCore + "ObjectReference")},
           {"lastTimestamp", time()},
           {"message", str()},
           {"reason", str()},
           {"related", schemaRef(kCore + "ObjectReference")},
           {"reportingComponent", str()},
           {"reportingInstance", str()},
           {"series", schemaRef(kCore + "EventSeries")},
           {"source", schemaRef(kCore + "EventSource")},
           {"type", str()}});

  s[kCore + "ServicePort"] = object({{"appProtocol", str()},
                                     {"name", str()},
                                     {"nodePort", int32()},
                                     {"port", int32()},
                                     {"protocol", str()},
                                     {"targetPort", typed("string", "int-or-string")}},
                                    {"port"});
  s[kCore + "ClientIPConfig"] = object({{"timeoutSeconds", int32()}});
  s[kCore + "SessionAffinityConfig"] = object({{"clientIP", schemaRef(kCore + "ClientIPConfig")}});
  json selector = stringMap();
  selector["x-kubernetes-map-type"] = "atomic";
  s[kCore + "ServiceSpec"] = object({{"allocateLoadBalancerNodePorts", boolean()},
                                     {"clusterIP", str()},
                                     {"clusterIPs", strings()},
                                     {"externalIPs", strings()},
                                     {"externalName", str()},
                                     {"externalTrafficPolicy", str()},
                                     {"healthCheckNodePort", int32()},
                                     {"internalTrafficPolicy", str()},
                                     {"ipFamilies", strings()},
                                     {"ipFamilyPolicy", str()},
                                     {"loadBalancerClass", str()},
                                     {"loadBalancerIP", str()},
                                     {"loadBalancerSourceRanges", strings()},
                                     {"ports", mapList(schemaRef(kCore + "ServicePort"), {"port", "protocol"})},
                                     {"publishNotReadyAddresses", boolean()},
                                     {"selector", selector},
                                     {"sessionAffinity", str()},
                                     {"sessionAffinityConfig", schemaRef(kCore + "SessionAffinityConfig")},
                                     {"trafficDistribution", str()},
                                     {"type", str()}});
  s[kCore + "PortStatus"] = object({{"error", str()}, {"port", int32()}, {"protocol", str()}}, {"port", "protocol"});
  s[kCore + "LoadBalancerIngress"] = object(
      {{"hostname", str()}, {"ip", str()}, {"ipMode", str()}, {"ports", arrayOf(schemaRef(kCore + "PortStatus"))}});
  s[kCore + "LoadBalancerStatus"] = object({{"ingress", arrayOf(schemaRef(kCore + "LoadBalancerIngress"))}});
  s[kCore + "ServiceStatus"] = object({{"conditions", mapList(schemaRef(kMeta + "Condition"), {"type"})},
                                       {"loadBalancer", schemaRef(kCore + "LoadBalancerStatus")}});
  addKind(s, kCore, "", "Service",
          {{"spec", schemaRef(kCore + "ServiceSpec")}, {"status", schemaRef(kCore + "ServiceStatus")}});

  // A pod's fields the framework stand-ins write; the rest is kept as sent (no kubelet or
  // scheduler reads it here).
  s[kCore + "Container"] = object({{"image", str()}, {"name", str()}}, {"name"});
  s[kCore + "Toleration"] = object(
      {{"effect", str()}, {"key", str()}, {"operator", str()}, {"tolerationSeconds", int64()}, {"value", str()}});
  json podSpec = object({{"containers", mapList(schemaRef(kCore + "Container"), {"name"})},
                         {"nodeSelector", stringMap()},
                         {"restartPolicy", str()},
                         {"serviceAccountName", str()},
                         {"tolerations", arrayOf(schemaRef(kCore + "Toleration"))}});
  podSpec["x-kubernetes-preserve-unknown-fields"] = true;
  s[kCore + "PodSpec"] = podSpec;
  s[kCore + "PodStatus"] = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  addKind(s, kCore, "", "Pod", {{"spec", schemaRef(kCore + "PodSpec")}, {"status", schemaRef(kCore + "PodStatus")}});
}

void addEventsAndLeases(json& s) {
  s[kEvents + "EventSeries"] = object({{"count", int32()}, {"lastObservedTime", schemaRef(kMeta + "MicroTime")}});
  addKind(s, kEvents, "events.k8s.io", "Event",
          {{"action", str()},
           {"deprecatedCount", int32()},
           {"deprecatedFirstTimestamp", time()},
           {"deprecatedLastTimestamp", time()},
           {"deprecatedSource", schemaRef(kCore + "EventSource")},
           {"eventTime", schemaRef(kMeta + "MicroTime")},
           {"note", str()},
           {"reason", str()},
           {"regarding", schemaRef(kCore + "ObjectReference")},
           {"related", schemaRef(kCore + "ObjectReference")},
           {"reportingController", str()},
           {"reportingInstance", str()},
           {"series", schemaRef(kEvents + "EventSeries")},
           {"type", str()}});
  s[kCoordination + "LeaseSpec"] = object({{"acquireTime", schemaRef(kMeta + "MicroTime")},
                                           {"holderIdentity", str()},
                                           {"leaseDurationSeconds", int32()},
                                           {"leaseTransitions", int32()},
                                           {"preferredHolder", str()},
                                           {"renewTime", schemaRef(kMeta + "MicroTime")},
                                           {"strategy", str()}});
  addKind(s, kCoordination, "coordination.k8s.io", "Lease", {{"spec", schemaRef(kCoordination + "LeaseSpec")}});
  addKind(s, kScheduling, "scheduling.k8s.io", "PriorityClass",
          {{"description", str()}, {"globalDefault", boolean()}, {"preemptionPolicy", str()}, {"value", int32()}});
  s[kScheduling + "PriorityClass"]["required"] = {"value"};
}

void addRbac(json& s) {
  const std::string group = "rbac.authorization.k8s.io";
  s[kRbac + "PolicyRule"] = object({{"apiGroups", strings()},
                                    {"nonResourceURLs", strings()},
                                    {"resourceNames", strings()},
                                    {"resources", strings()},
                                    {"verbs", strings()}},
                                   {"verbs"});
  s[kRbac + "AggregationRule"] = object({{"clusterRoleSelectors", arrayOf(schemaRef(kMeta + "LabelSelector"))}});
  s[kRbac + "RoleRef"] = object({{"apiGroup", str()}, {"kind", str()}, {"name", str()}}, {"apiGroup", "kind", "name"});
  s[kRbac + "RoleRef"]["x-kubernetes-map-type"] = "atomic";
  s[kRbac + "Subject"] =
      object({{"apiGroup", str()}, {"kind", str()}, {"name", str()}, {"namespace", str()}}, {"kind", "name"});
  s[kRbac + "Subject"]["x-kubernetes-map-type"] = "atomic";
  const json rules = arrayOf(schemaRef(kRbac + "PolicyRule"));
  addKind(s, kRbac, group, "ClusterRole",
          {{"aggregationRule", schemaRef(kRbac + "AggregationRule")}, {"rules", rules}});
  addKind(s, kRbac, group, "Role", {{"rules", rules}});
  for (const char* kind : {"ClusterRoleBinding", "RoleBinding"}) {
    addKind(s, kRbac, group, kind,
            {{"roleRef", schemaRef(kRbac + "RoleRef")}, {"subjects", arrayOf(schemaRef(kRbac + "Subject"))}});
    s[kRbac + kind]["required"] = {"roleRef"};
  }
}

// TokenReview and SubjectAccessReview (reviews.h), as their Go types have them.
void addReviews(json& s) {
  s[kAuthentication + "UserInfo"] = object({{"extra", {{"type", "object"}, {"additionalProperties", strings()}}},
                                            {"groups", strings()},
                                            {"uid", str()},
                                            {"username", str()}});
  s[kAuthentication + "TokenReviewSpec"] = object({{"audiences", strings()}, {"token", str()}});
  s[kAuthentication + "TokenReviewStatus"] = object({{"audiences", strings()},
                                                     {"authenticated", boolean()},
                                                     {"error", str()},
                                                     {"user", schemaRef(kAuthentication + "UserInfo")}});
  addKind(s, kAuthentication, "authentication.k8s.io", "TokenReview",
          {{"spec", schemaRef(kAuthentication + "TokenReviewSpec")},
           {"status", schemaRef(kAuthentication + "TokenReviewStatus")}});
  s[kAuthorization + "NonResourceAttributes"] = object({{"path", str()}, {"verb", str()}});
  s[kAuthorization + "ResourceAttributes"] = object({{"group", str()},
                                                     {"name", str()},
                                                     {"namespace", str()},
                                                     {"resource", str()},
                                                     {"subresource", str()},
                                                     {"verb", str()},
                                                     {"version", str()}});
  s[kAuthorization + "SubjectAccessReviewSpec"] =
      object({{"extra", {{"type", "object"}, {"additionalProperties", strings()}}},
              {"groups", strings()},
              {"nonResourceAttributes", schemaRef(kAuthorization + "NonResourceAttributes")},
              {"resourceAttributes", schemaRef(kAuthorization + "ResourceAttributes")},
              {"uid", str()},
              {"user", str()}});
  s[kAuthorization + "SubjectAccessReviewStatus"] = object(
      {{"allowed", boolean()}, {"denied", boolean()}, {"evaluationError", str()}, {"reason", str()}}, {"allowed"});
  addKind(s, kAuthorization, "authorization.k8s.io", "SubjectAccessReview",
          {{"spec", schemaRef(kAuthorization + "SubjectAccessReviewSpec")},
           {"status", schemaRef(kAuthorization + "SubjectAccessReviewStatus")}});
}

void addWebhooks(json& s) {
  s[kAdmission + "ServiceReference"] =
      object({{"name", str()}, {"namespace", str()}, {"path", str()}, {"port", int32()}}, {"namespace", "name"});
  s[kAdmission + "WebhookClientConfig"] = object(
      {{"caBundle", typed("string", "byte")}, {"service", schemaRef(kAdmission + "ServiceReference")}, {"url", str()}});
  s[kAdmission + "RuleWithOperations"] = object({{"apiGroups", strings()},
                                                 {"apiVersions", strings()},
                                                 {"operations", strings()},
                                                 {"resources", strings()},
                                                 {"scope", str()}});
  s[kAdmission + "MatchCondition"] = object({{"expression", str()}, {"name", str()}}, {"name", "expression"});
  auto webhook = [&](bool mutating) {
    json props = {{"admissionReviewVersions", strings()},
                  {"clientConfig", schemaRef(kAdmission + "WebhookClientConfig")},
                  {"failurePolicy", str()},
                  {"matchConditions", mapList(schemaRef(kAdmission + "MatchCondition"), {"name"})},
                  {"matchPolicy", str()},
                  {"name", str()},
                  {"namespaceSelector", schemaRef(kMeta + "LabelSelector")},
                  {"objectSelector", schemaRef(kMeta + "LabelSelector")},
                  {"rules", arrayOf(schemaRef(kAdmission + "RuleWithOperations"))},
                  {"sideEffects", str()},
                  {"timeoutSeconds", int32()}};
    if (mutating) props["reinvocationPolicy"] = str();
    return object(std::move(props), {"name", "clientConfig", "sideEffects", "admissionReviewVersions"});
  };
  s[kAdmission + "MutatingWebhook"] = webhook(true);
  s[kAdmission + "ValidatingWebhook"] = webhook(false);
  addKind(s, kAdmission, "admissionregistration.k8s.io", "MutatingWebhookConfiguration",
          {{"webhooks", mapList(schemaRef(kAdmission + "MutatingWebhook"), {"name"})}});
  addKind(s, kAdmission, "admissionregistration.k8s.io", "ValidatingWebhookConfiguration",
          {{"webhooks", mapList(schemaRef(kAdmission + "ValidatingWebhook"), {"name"})}});
}

void addCustomResourceDefinitions(json& s) {
  const std::string& x = kExtensions;
  // Left open: kubectl never walks into it, since spec.versions has no patch merge key and is
  // replaced whole.
  s[x + "JSONSchemaProps"] = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  s[x + "CustomResourceValidation"] = object({{"openAPIV3Schema", schemaRef(x + "JSONSchemaProps")}});
  s[x + "CustomResourceColumnDefinition"] = object({{"description", str()},
                                                    {"format", str()},
                                                    {"jsonPath", str()},
                                                    {"name", str()},
                                                    {"priority", int32()},
                                                    {"type", str()}},
                                                   {"name", "type", "jsonPath"});
  s[x + "SelectableField"] = object({{"jsonPath", str()}}, {"jsonPath"});
  s[x + "CustomResourceSubresourceScale"] =
      object({{"labelSelectorPath", str()}, {"specReplicasPath", str()}, {"statusReplicasPath", str()}});
  s[x + "CustomResourceSubresourceStatus"] = {{"type", "object"}};
  s[x + "CustomResourceSubresources"] = object({{"scale", schemaRef(x + "CustomResourceSubresourceScale")},
                                                {"status", schemaRef(x + "CustomResourceSubresourceStatus")}});
  s[x + "CustomResourceDefinitionVersion"] =
      object({{"additionalPrinterColumns", arrayOf(schemaRef(x + "CustomResourceColumnDefinition"))},
              {"deprecated", boolean()},
              {"deprecationWarning", str()},
              {"name", str()},
              {"schema", schemaRef(x + "CustomResourceValidation")},
              {"selectableFields", arrayOf(schemaRef(x + "SelectableField"))},
              {"served", boolean()},
              {"storage", boolean()},
              {"subresources", schemaRef(x + "CustomResourceSubresources")}},
             {"name", "served", "storage"});
  s[x + "CustomResourceDefinitionNames"] = object({{"categories", strings()},
                                                   {"kind", str()},
                                                   {"listKind", str()},
                                                   {"plural", str()},
                                                   {"shortNames", strings()},
                                                   {"singular", str()}},
                                                  {"plural", "kind"});
  s[x + "ServiceReference"] =
      object({{"name", str()}, {"namespace", str()}, {"path", str()}, {"port", int32()}}, {"namespace", "name"});
  s[x + "WebhookClientConfig"] =
      object({{"caBundle", typed("string", "byte")}, {"service", schemaRef(x + "ServiceReference")}, {"url", str()}});
  s[x + "WebhookConversion"] =
      object({{"clientConfig", schemaRef(x + "WebhookClientConfig")}, {"conversionReviewVersions", strings()}});
  s[x + "CustomResourceConversion"] = object({{"strategy", str()}, {"webhook", schemaRef(x + "WebhookConversion")}});
  s[x + "CustomResourceDefinitionSpec"] =
      object({{"conversion", schemaRef(x + "CustomResourceConversion")},
              {"group", str()},
              {"names", schemaRef(x + "CustomResourceDefinitionNames")},
              {"preserveUnknownFields", boolean()},
              {"scope", str()},
              {"versions", arrayOf(schemaRef(x + "CustomResourceDefinitionVersion"))}},
             {"group", "names", "scope", "versions"});
  s[x + "CustomResourceDefinitionCondition"] = object(
      {{"lastTransitionTime", time()}, {"message", str()}, {"reason", str()}, {"status", str()}, {"type", str()}},
      {"type", "status"});
  s[x + "CustomResourceDefinitionStatus"] =
      object({{"acceptedNames", schemaRef(x + "CustomResourceDefinitionNames")},
              {"conditions", mapList(schemaRef(x + "CustomResourceDefinitionCondition"), {"type"})},
              {"storedVersions", strings()}});
  addKind(s, x, "apiextensions.k8s.io", "CustomResourceDefinition",
          {{"spec", schemaRef(x + "CustomResourceDefinitionSpec")},
           {"status", schemaRef(x + "CustomResourceDefinitionStatus")}});
}

json makeSchemas() {
  json s = json::object();
  addMeta(s);
  addCore(s);
  addEventsAndLeases(s);
  addRbac(s);
  addReviews(s);
  addWebhooks(s);
  addCustomResourceDefinitions(s);
  return s;
}

}  // namespace

std::string builtinSchemaName(const std::string& group, const std::string& version, const std::string& kind) {
  if (group.empty()) return "io.k8s.api.core." + version + "." + kind;
  if (group == "apiextensions.k8s.io")
    return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions." + version + "." + kind;
  const auto dot = group.find('.');
  return "io.k8s.api." + group.substr(0, dot) + "." + version + "." + kind;
}

const json& builtinSchemas() {
  static const json schemas = makeSchemas();
  return schemas;
}

}  // namespace mka::sandbox::detail
