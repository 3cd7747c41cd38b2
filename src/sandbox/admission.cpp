#include "mka/sandbox/admission.h"

#include "ids.h"

#include "mka/common/base64.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string_view>

#include "log.h"
#include "match_conditions.h"
#include "mka/common/json_fields.h"
#include "mka/net/openssl.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/patch.h"
#include "mka/sandbox/selectors.h"

// What kube-apiserver's admission webhook plugins do (k8s.io/apiserver/pkg/admission/plugin/
// webhook: generic.Webhook.ShouldCallHook, rules.Matcher, namespace/object matchers, the mutating
// and validating dispatchers, request.CreateV1AdmissionReview / VerifyAdmissionResponse), with
// their error wording, for the subset the sandbox needs. Differences, on purpose:
// - Validating webhooks run one after the other, in the same order as the mutating ones, and
//   the first denial or failure wins (kube-apiserver calls them in parallel and reports the
//   first error it collected).
// - matchPolicy Equivalent only knows the other served versions of the same resource (a CRD
//   served at v1beta1 and v1, say), converted as a CRD with conversion strategy None is: only
//   apiVersion changes. kube-apiserver also maps resources across groups (events <->
//   events.k8s.io/events, ...), which the sandbox does not.
// - matchConditions are evaluated by mka/cel's subset (match_conditions.h says what differs);
//   no auditAnnotations, no v1beta1 AdmissionReview.
// - The webhook client trusts the caBundle and, because cpp-httplib 0.11 always adds them, the
//   system's default roots as well (kube-apiserver: caBundle only).

namespace mka::sandbox {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kAdmissionGroup = "admissionregistration.k8s.io";
constexpr const char* kMetadataNameLabel = "kubernetes.io/metadata.name";

// ---- small JSON readers -------------------------------------------------------------------

using json_fields::metadataString;
using json_fields::stringMember;

std::vector<std::string> stringList(const json& object, const char* key) {
  std::vector<std::string> out;
  if (!object.is_object()) return out;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return out;
  for (const auto& item : *it) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

json labelsOf(const json& object) {
  if (!object.is_object()) return nullptr;
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  const auto labels = meta->find("labels");
  return labels == meta->end() ? json(nullptr) : *labels;
}

std::string goQuote(const std::string& text) { return json(text).dump(); }  // Go's %q, near enough

bool contains(const std::vector<std::string>& items, const std::string& wanted) {
  return std::find(items.begin(), items.end(), wanted) != items.end();
}

// ---- OpenSSL helpers ----------------------------------------------------------------------

// ---- errors -------------------------------------------------------------------------------

// webhookutil.ErrCallingWebhook: the call itself failed. failurePolicy decides whether the
// request fails (500 "failed calling webhook ...") or the webhook is skipped.
struct CallFailure {
  std::string reason;  // what follows `failed calling webhook "<name>": `
};

// webhookerrors.ToStatusErr: a webhook's denial, with its own status code (400 when it gave
// none or one below 400), reason and details.
ApiError denial(const std::string& hook, const json& result) {
  const std::string deniedBy = "admission webhook " + goQuote(hook) + " denied the request";
  const std::string message = stringMember(result, "message");
  const std::string reason = stringMember(result, "reason");
  std::string text = deniedBy + " without explanation";
  if (!message.empty()) {
    text = deniedBy + ": " + message;
  } else if (!reason.empty()) {
    text = deniedBy + ": " + reason;
  }
  int code = 0;
  if (result.is_object() && result.contains("code") && result["code"].is_number_integer()) {
    code = result["code"].get<int>();
  }
  if (code < 400) code = 400;
  json details = result.is_object() && result.contains("details") ? result["details"] : json(nullptr);
  return ApiError(code, reason, text, std::move(details));
}

// ---- where to send the AdmissionReview ------------------------------------------------------

struct Endpoint {
  std::string host;       // the name the certificate must be valid for (and the Host header)
  std::string connectTo;  // IP literal to dial instead of resolving `host` ("" = resolve host)
  int port = 443;
  std::string path;         // request path with the ?timeout= query
  std::string url;          // as kube-apiserver prints it: https://host:port/path?timeout=10s
  std::string dialAddress;  // "ip:port" as Go prints a dial error
};

struct ParsedUrl {
  std::string host;
  int port = 443;
  std::string path;
};

// "https://host[:port][/path]"; IPv6 hosts in brackets. nullopt when it is not such a URL.
std::optional<ParsedUrl> parseHttpsUrl(const std::string& url) {
  constexpr std::string_view scheme = "https://";
  if (!url.starts_with(scheme)) return std::nullopt;
  const std::string rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  ParsedUrl out;
  out.path = slash == std::string::npos ? "" : rest.substr(slash);
  std::string portText;
  if (authority.starts_with("[")) {
    const auto close = authority.find(']');
    if (close == std::string::npos) return std::nullopt;
    out.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return std::nullopt;
      portText = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos) portText = authority.substr(colon + 1);
  }
  if (out.host.empty()) return std::nullopt;
  if (!portText.empty()) {
    try {
      std::size_t used = 0;
      out.port = std::stoi(portText, &used);
      if (used != portText.size() || out.port <= 0 || out.port > 65535) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return out;
}

std::string hostPort(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string withTimeout(std::string path, int timeoutSeconds) {
  if (path.empty()) path = "/";
  return path + "?timeout=" + std::to_string(timeoutSeconds) + "s";
}

// clientConfig.url, or clientConfig.service through the resolver. Throws CallFailure.
Endpoint endpointOf(const json& clientConfig, const ServiceResolver& resolver, int timeoutSeconds) {
  Endpoint e;
  if (clientConfig.is_object() && clientConfig.contains("service") && clientConfig["service"].is_object()) {
    const json& service = clientConfig["service"];
    const std::string ns = stringMember(service, "namespace");
    const std::string name = stringMember(service, "name");
    int servicePort = 443;
    if (service.contains("port") && service["port"].is_number_integer()) servicePort = service["port"].get<int>();
    e.host = name + "." + ns + ".svc";
    e.port = servicePort;
    e.path = withTimeout(stringMember(service, "path"), timeoutSeconds);
    e.url = "https://" + hostPort(e.host, e.port) + e.path;
    const auto resolved = resolver.resolve(ns, name, servicePort);
    if (!resolved) {
      // kube-apiserver's service resolver: the Service lister's NotFound.
      throw CallFailure{"failed to call webhook: Post " + goQuote(e.url) + ": service " + goQuote(name) + " not found"};
    }
    const auto target = parseHttpsUrl(*resolved);
    if (!target) {
      throw CallFailure{"failed to call webhook: Post " + goQuote(e.url) + ": service " + goQuote(ns + "/" + name) +
                        " resolved to " + goQuote(*resolved) + ", which is not https://<ip>:<port>"};
    }
    e.connectTo = target->host == "localhost" ? "127.0.0.1" : target->host;
    e.dialAddress = hostPort(e.connectTo, target->port);
    // The certificate is checked for <name>.<ns>.svc (cpp-httplib verifies the name it was
    // given, and dials the address mapped to it); only the port changes to the exposed one.
    e.port = target->port;
    return e;
  }
  const std::string url = stringMember(clientConfig, "url");
  const auto parsed = parseHttpsUrl(url);
  if (!parsed) {
    throw CallFailure{"could not get REST client: clientConfig.url " + goQuote(url) +
                      " is not an https://host[:port][/path] URL; set clientConfig.url or clientConfig.service"};
  }
  e.host = parsed->host;
  e.port = parsed->port;
  e.path = withTimeout(parsed->path, timeoutSeconds);
  e.url = "https://" + hostPort(e.host, e.port) + e.path;
  if (e.host == "localhost") e.connectTo = "127.0.0.1";
  e.dialAddress = hostPort(e.connectTo.empty() ? e.host : e.connectTo, e.port);
  return e;
}

// Go's wording for a failed TLS verification (crypto/tls + crypto/x509).
std::string verificationError(long result, const std::string& host) {
  std::string why;
  switch (result) {
    case X509_V_OK:  // the chain was fine: the name check failed
      why = "x509: certificate is not valid for " + host;
      break;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE: why = "x509: certificate signed by unknown authority"; break;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID: why = "x509: certificate has expired or is not yet valid"; break;
    default: why = std::string("x509: ") + X509_verify_cert_error_string(result);
  }
  return "tls: failed to verify certificate: " + why;
}

// client-go's text for a non-2xx answer that is not a metav1.Status (errors.NewGenericServerResponse).
std::string unexpectedStatus(int status, const std::string& body) {
  const json parsed = json::parse(body, nullptr, false);
  if (parsed.is_object() && stringMember(parsed, "kind") == "Status" && !stringMember(parsed, "message").empty()) {
    return stringMember(parsed, "message");
  }
  switch (status) {
    case 400: return "the server rejected our request for an unknown reason";
    case 401: return "Unauthorized";
    case 404: return "the server could not find the requested resource";
    case 405: return "the server does not allow this method on the requested resource";
    case 503: return "the server is currently unable to handle the request";
    case 504:
      return "the server was unable to return a response in the time allotted, but may still be processing the "
             "request";
    default: break;
  }
  if (status >= 500) {
    std::string trimmed = body.substr(0, 1024);
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.pop_back();
    return "an error on the server (" + goQuote(trimmed.empty() ? "unknown" : trimmed) +
           ") has prevented the request from succeeding";
  }
  return "the server responded with the status code " + std::to_string(status) + " but did not return more information";
}

// POSTs `review` and returns the decoded AdmissionReview. Throws CallFailure.
json post(const Endpoint& endpoint, const std::string& caBundle, int timeoutSeconds, const json& review) {
  httplib::SSLClient client(endpoint.host, endpoint.port);
  if (!endpoint.connectTo.empty()) client.set_hostname_addr_map({{endpoint.host, endpoint.connectTo}});
  if (!caBundle.empty()) {
    const auto pem = base64Decode(caBundle);
    net::OpensslPtr<X509_STORE> store = pem ? net::certificateStore(*pem) : nullptr;
    if (!store) {
      throw CallFailure{
          "could not get REST client: unable to load root certificates: unable to parse bytes as PEM "
          "block (clientConfig.caBundle must be the base64 of PEM certificates)"};
    }
    client.set_ca_cert_store(store.release());  // the client's SSL_CTX owns it from here
  }
  // Host name verification: cpp-httplib 0.11 checks the certificate's SANs against the host
  // it was constructed with (the service's DNS name), while set_hostname_addr_map makes it dial
  // the loopback address; SNI carries the same name.
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(timeoutSeconds, 0);
  // cpp-httplib's timeouts bound each read and write, not the whole exchange as Go's context
  // does: a webhook that trickles bytes could take longer.
  client.set_read_timeout(timeoutSeconds, 0);
  client.set_write_timeout(timeoutSeconds, 0);
  client.set_keep_alive(false);

  const auto started = std::chrono::steady_clock::now();
  const httplib::Headers headers = {{"Accept", "application/json, */*"}};
  auto res = client.Post(endpoint.path.c_str(), headers, review.dump(), "application/json");
  const auto elapsed = std::chrono::steady_clock::now() - started;
  const std::string prefix = "failed to call webhook: Post " + goQuote(endpoint.url) + ": ";
  if (!res) {
    const auto error = res.error();
    std::string why;
    if (elapsed + 10ms >= std::chrono::seconds(timeoutSeconds)) {
      why = "context deadline exceeded";
    } else if (error == httplib::Error::Connection) {
      // cpp-httplib reports every failed connect as Error::Connection without the errno; on
      // the loopback addresses webhooks have in the sandbox that is a refused connection.
      why = "dial tcp " + endpoint.dialAddress + ": connect: connection refused";
    } else if (error == httplib::Error::SSLServerVerification) {
      why = verificationError(client.get_openssl_verify_result(), endpoint.host);
    } else if (error == httplib::Error::SSLConnection) {
      why = "remote error: tls: handshake failure";
    } else if (error == httplib::Error::Read) {
      why = "EOF";
    } else {
      why = httplib::to_string(error);
    }
    throw CallFailure{prefix + why};
  }
  if (res->status < 200 || res->status > 206) {
    throw CallFailure{"failed to call webhook: " + unexpectedStatus(res->status, res->body)};
  }
  json answer = json::parse(res->body, nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) {
    throw CallFailure{"failed to call webhook: the webhook's answer is not a JSON object (an AdmissionReview): " +
                      goQuote(res->body.substr(0, 256))};
  }
  return answer;
}

// ---- matching -----------------------------------------------------------------------------

bool exactOrWildcard(const std::vector<std::string>& items, const std::string& requested) {
  return contains(items, "*") || contains(items, requested);
}

// rules.Matcher for one RuleWithOperations against (group, version, resource, subresource).
bool ruleMatches(const json& rule, const AdmissionAttributes& a, const std::string& version) {
  const bool isNamespace = a.ref.group.empty() && a.ref.plural == "namespaces";
  const std::string scope = stringMember(rule, "scope", "*");
  if (scope == "Namespaced") {
    if (isNamespace || a.ref.namespace_.empty()) return false;
  } else if (scope == "Cluster") {
    if (!isNamespace && !a.ref.namespace_.empty()) return false;
  } else if (scope != "*") {
    return false;
  }
  const auto operations = stringList(rule, "operations");
  if (!contains(operations, "*") && !contains(operations, a.operation)) return false;
  if (!exactOrWildcard(stringList(rule, "apiGroups"), a.ref.group)) return false;
  if (!exactOrWildcard(stringList(rule, "apiVersions"), version)) return false;
  for (const auto& entry : stringList(rule, "resources")) {
    const auto slash = entry.find('/');
    const std::string resource = entry.substr(0, slash);
    const std::string sub = slash == std::string::npos ? "" : entry.substr(slash + 1);
    if ((resource == "*" || resource == a.ref.plural) && (sub == "*" || sub == a.ref.subresource)) return true;
  }
  return false;
}

bool anyRuleMatches(const json& hook, const AdmissionAttributes& a, const std::string& version) {
  if (!hook.contains("rules") || !hook["rules"].is_array()) return false;
  return std::any_of(hook["rules"].begin(), hook["rules"].end(),
                     [&](const json& rule) { return ruleMatches(rule, a, version); });
}

// The version the webhook is called with: the request's own when a rule names it; under
// matchPolicy Equivalent (the default) otherwise the first other served version of the same
// resource that a rule names.
std::optional<std::string> invocationVersion(const json& hook, const AdmissionAttributes& a,
                                             const std::string& requestVersion) {
  if (anyRuleMatches(hook, a, requestVersion)) return requestVersion;
  if (stringMember(hook, "matchPolicy", "Equivalent") != "Equivalent" || a.type == nullptr) return std::nullopt;
  std::vector<std::string> others;
  for (const auto& v : a.type->versions) {
    if (v.served && v.name != requestVersion) others.push_back(v.name);
  }
  std::sort(others.begin(), others.end(),
            [](const std::string& x, const std::string& y) { return compareVersionPriority(x, y) > 0; });
  for (const auto& v : others) {
    if (anyRuleMatches(hook, a, v)) return v;
  }
  return std::nullopt;
}

enum class Match { Yes, No, Error };

struct SelectorOutcome {
  Match match = Match::Yes;
  std::optional<ApiError> error;
};

SelectorOutcome matchNamespaceSelector(const json& hook, const AdmissionAttributes& a, const json& object,
                                       const ObjectStore& store) {
  const bool isNamespace = a.ref.group.empty() && a.ref.plural == "namespaces";
  // A cluster-scoped object (but a Namespace) is never exempted by a namespaceSelector.
  if (a.ref.namespace_.empty() && !isNamespace) return {};
  LabelSelector selector;
  try {
    selector = LabelSelector::fromJson(hook.value("namespaceSelector", json(nullptr)));
  } catch (const ApiError& e) {
    return {Match::Error, ApiError::internal(e.what())};
  }
  if (selector.empty()) return {};
  std::string name = isNamespace ? a.ref.name : a.ref.namespace_;
  json labels;
  if (isNamespace && a.ref.subresource.empty() && (a.operation == "CREATE" || a.operation == "UPDATE")) {
    // The namespace being written: its new labels (the stored one is not there yet).
    labels = labelsOf(object);
    if (name.empty()) name = metadataString(object, "name");
  } else {
    const auto ns = store.get(ObjectKey{"", "namespaces", "", name});
    if (!ns) return {Match::Error, ApiError::notFound("namespaces", name)};
    labels = labelsOf(*ns);
  }
  if (!labels.is_object()) labels = json::object();
  // kube-apiserver labels every namespace with its name.
  labels[kMetadataNameLabel] = name;
  return {selector.matches(labels) ? Match::Yes : Match::No, std::nullopt};
}

SelectorOutcome matchObjectSelector(const json& hook, const json& object, const json& oldObject) {
  LabelSelector selector;
  try {
    selector = LabelSelector::fromJson(hook.value("objectSelector", json(nullptr)));
  } catch (const ApiError& e) {
    return {Match::Error, ApiError::internal(e.what())};
  }
  if (selector.empty()) return {};
  const auto matches = [&](const json& o) { return o.is_object() && selector.matches(labelsOf(o)); };
  return {matches(object) || matches(oldObject) ? Match::Yes : Match::No, std::nullopt};
}

// generic.Webhook.ShouldCallHook: the version to call the webhook with, nullopt to skip it;
// throws the selector's error (e.g. 404 for a missing namespace) only when the webhook applies.
std::optional<std::string> shouldCall(const json& hook, const AdmissionAttributes& a, const std::string& version,
                                      const json& object, const ObjectStore& store) {
  const auto invocation = invocationVersion(hook, a, version);
  if (!invocation) return std::nullopt;
  auto ns = matchNamespaceSelector(hook, a, object, store);
  if (ns.match == Match::No) return std::nullopt;
  auto obj = matchObjectSelector(hook, object, a.oldObject);
  if (obj.match == Match::No) return std::nullopt;
  if (ns.error) throw *ns.error;
  if (obj.error) throw *obj.error;
  return invocation;
}

// ---- the call -----------------------------------------------------------------------------

struct Hook {
  std::string configuration;
  json spec;  // one entry of .webhooks
  std::string name() const { return stringMember(spec, "name"); }
};

std::vector<Hook> hooksOf(const ObjectStore& store, const std::string& plural) {
  std::vector<Hook> out;
  // Ordered by name: kube-apiserver sorts configurations by name, webhooks stay in order.
  for (const auto& config : store.list(kAdmissionGroup, plural, "", nullptr).items) {
    const std::string configName = metadataString(config, "name");
    const auto hooks = config.find("webhooks");
    if (hooks == config.end() || !hooks->is_array()) continue;
    for (const auto& hook : *hooks) {
      if (hook.is_object()) out.push_back({configName, hook});
    }
  }
  return out;
}

json atVersion(json object, const std::string& apiVersion) {
  if (object.is_object() && object.contains("apiVersion")) object["apiVersion"] = apiVersion;
  return object;
}

json operationOptions(const AdmissionAttributes& a) {
  std::string kind = "CreateOptions";
  if (a.operation == "UPDATE") kind = "UpdateOptions";
  if (a.operation == "DELETE") kind = "DeleteOptions";
  json options = {{"kind", kind}, {"apiVersion", "meta.k8s.io/v1"}};
  if (a.dryRun) options["dryRun"] = json::array({"All"});
  return options;
}

std::string requestName(const AdmissionAttributes& a) {
  if (!a.ref.name.empty()) return a.ref.name;
  for (const json* o : {&a.object, &a.oldObject}) {
    const std::string name = metadataString(*o, "name");
    if (!name.empty()) return name;
  }
  return "";
}

// Builds and sends the AdmissionReviews of one admit() call.
// Threads: lives on the request thread that called admit(), for that call only.
class Caller {
 public:
  Caller(const AdmissionAttributes& a, const ServiceResolver& resolver, std::vector<std::string>* warnings)
      : a_(a), resolver_(resolver), warnings_(warnings) {
    version_ = a.version.empty() ? a.ref.version : a.version;
    kind_ = a.type != nullptr ? a.type->kind : "";
  }

  const std::string& version() const { return version_; }

  // generic.Webhook.ShouldCallHook's last step: whether `hook`'s matchConditions all hold for
  // the request with `object` (at the version the webhook is called with). Throws kube-apiserver's
  // 403 when one failed to evaluate under failurePolicy Fail.
  bool conditionsHold(const Hook& hook, const std::string& invocationVersion, const json& object) const {
    if (!hook.spec.contains("matchConditions")) return true;
    const std::string apiVersion = apiVersionOf(a_.ref.group, invocationVersion);
    // The CEL variable is the typed AdmissionRequest: fields left unset read as their zero value.
    json request = requestOf(invocationVersion, "");
    for (const char* key : {"name", "namespace", "subResource", "requestSubResource"})
      if (!request.contains(key)) request[key] = "";
    const auto outcome = detail::evaluateMatchConditions(hook.spec, atVersion(object, apiVersion),
                                                         atVersion(a_.oldObject, apiVersion), request);
    if (outcome.error) {
      log::warn(logger(), "failed evaluating match conditions, failing closed",
                {{"webhook", hook.name()}, {"configuration", hook.configuration}, {"error", *outcome.error}});
      // apierrors.NewForbidden(attr.GetResource().GroupResource(), attr.GetName(), err).
      const std::string resource = a_.ref.plural + (a_.ref.group.empty() ? "" : "." + a_.ref.group);
      const std::string name = requestName(a_);
      json details = json::object();
      if (!name.empty()) details["name"] = name;
      if (!a_.ref.group.empty()) details["group"] = a_.ref.group;
      details["kind"] = a_.ref.plural;
      throw ApiError(403, "Forbidden",
                     resource + (name.empty() ? "" : " " + goQuote(name)) + " is forbidden: " + *outcome.error,
                     std::move(details));
    }
    return outcome.call;
  }

  // Calls one webhook with `object` as the request's object. Returns the patched object (for
  // a mutating webhook; `object` unchanged otherwise). Throws ApiError for a denial or an
  // error no failurePolicy covers, CallFailure for a failed call.
  json call(const Hook& hook, bool mutating, const std::string& invocationVersion, const json& object) {
    const std::string name = hook.name();
    if (a_.dryRun) {
      if (!hook.spec.contains("sideEffects") || !hook.spec["sideEffects"].is_string()) {
        throw CallFailure{"Webhook SideEffects is nil"};
      }
      const std::string sideEffects = hook.spec["sideEffects"].get<std::string>();
      if (sideEffects != "None" && sideEffects != "NoneOnDryRun") {
        throw ApiError::badRequest("admission webhook " + goQuote(name) + " does not support dry run");
      }
    }
    if (!contains(stringList(hook.spec, "admissionReviewVersions"), "v1")) {
      throw CallFailure{
          "could not create admission objects: webhook does not accept known AdmissionReview versions "
          "(v1): the sandbox sends admission.k8s.io/v1 only; add \"v1\" to admissionReviewVersions"};
    }
    int timeoutSeconds = 10;
    if (hook.spec.contains("timeoutSeconds") && hook.spec["timeoutSeconds"].is_number_integer()) {
      timeoutSeconds = std::max(1, hook.spec["timeoutSeconds"].get<int>());
    }
    const json clientConfig = hook.spec.value("clientConfig", json::object());
    const Endpoint endpoint = endpointOf(clientConfig, resolver_, timeoutSeconds);

    const std::string uid = detail::newUid();
    const std::string requestApiVersion = apiVersionOf(a_.ref.group, version_);
    const std::string hookApiVersion = apiVersionOf(a_.ref.group, invocationVersion);
    json request = requestOf(invocationVersion, uid);
    request["object"] = atVersion(object, hookApiVersion);
    request["oldObject"] = atVersion(a_.oldObject, hookApiVersion);
    const json review = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}};

    const json answer = post(endpoint, stringMember(clientConfig, "caBundle"), timeoutSeconds, review);
    const json response = verify(answer, uid, mutating);

    if (warnings_ != nullptr) {
      for (const auto& w : stringList(response, "warnings")) warnings_->push_back(w);
    }
    if (!response.value("allowed", false)) throw denial(name, response.value("status", json(nullptr)));
    if (!mutating || !response.contains("patch")) return object;

    const std::string patchType = stringMember(response, "patchType");
    if (patchType != "JSONPatch") throw CallFailure{"unsupported patch type " + goQuote(patchType)};
    const auto patchText = base64Decode(stringMember(response, "patch"));
    const json patchDoc = patchText ? json::parse(*patchText, nullptr, false) : json(json::value_t::discarded);
    if (!patchDoc.is_array()) {
      throw CallFailure{
          "received undecodable patch in webhook response: response.patch must be the base64 of a "
          "JSON array of RFC 6902 operations"};
    }
    if (patchDoc.empty()) return object;
    if (!object.is_object()) {
      throw ApiError::internal("admission webhook " + goQuote(name) +
                               " attempted to modify the object, which is not supported for this operation");
    }
    json patched;
    try {
      patched = patch::jsonPatch(atVersion(object, hookApiVersion), patchDoc);
    } catch (const ApiError& e) {
      throw ApiError::internal(e.what());
    }
    return atVersion(std::move(patched), requestApiVersion);
  }

 private:
  // The AdmissionRequest without its objects, for a webhook called at `invocationVersion`.
  json requestOf(const std::string& invocationVersion, const std::string& uid) const {
    json request = {
        {"uid", uid},
        {"kind", {{"group", a_.ref.group}, {"version", invocationVersion}, {"kind", kind_}}},
        {"resource", {{"group", a_.ref.group}, {"version", invocationVersion}, {"resource", a_.ref.plural}}},
        {"requestKind", {{"group", a_.ref.group}, {"version", version_}, {"kind", kind_}}},
        {"requestResource", {{"group", a_.ref.group}, {"version", version_}, {"resource", a_.ref.plural}}},
        {"operation", a_.operation},
        {"userInfo", {{"username", a_.user.name}, {"groups", a_.user.groups}}},
        {"dryRun", a_.dryRun},
        {"options", operationOptions(a_)},
    };
    if (!a_.ref.subresource.empty()) {
      request["subResource"] = a_.ref.subresource;
      request["requestSubResource"] = a_.ref.subresource;
    }
    if (const std::string n = requestName(a_); !n.empty()) request["name"] = n;
    if (!a_.ref.namespace_.empty()) request["namespace"] = a_.ref.namespace_;
    return request;
  }

  // request.VerifyAdmissionResponse for admission.k8s.io/v1. Returns .response.
  static json verify(const json& answer, const std::string& uid, bool mutating) {
    const auto invalid = [](const std::string& why) {
      return CallFailure{"received invalid webhook response: " + why};
    };
    if (!answer.contains("response") || !answer["response"].is_object()) throw invalid("webhook response was absent");
    const json& response = answer["response"];
    const std::string got = stringMember(response, "uid");
    if (got != uid) throw invalid("expected response.uid=" + goQuote(uid) + ", got " + goQuote(got));
    const std::string apiVersion = stringMember(answer, "apiVersion");
    const std::string kind = stringMember(answer, "kind");
    if (apiVersion != "admission.k8s.io/v1" || kind != "AdmissionReview") {
      throw invalid("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got " + apiVersion +
                    ", Kind=" + kind);
    }
    const bool hasPatch = !stringMember(response, "patch").empty();
    const bool hasPatchType = response.contains("patchType") && !response["patchType"].is_null();
    if (mutating) {
      if (hasPatch && !hasPatchType) throw invalid("webhook returned response.patch but not response.patchType");
      if (!hasPatch && hasPatchType) throw invalid("webhook returned response.patchType but not response.patch");
    } else {
      if (hasPatch) throw invalid("validating webhook may not return response.patch");
      if (hasPatchType) throw invalid("validating webhook may not return response.patchType");
    }
    return response;
  }

  const AdmissionAttributes& a_;
  const ServiceResolver& resolver_;
  std::vector<std::string>* warnings_;
  std::string version_;
  std::string kind_;
};

// Runs one webhook under its failurePolicy: a failed call is an InternalError (Fail, the
// default in v1) or skipped with a warning (Ignore). Returns the object to go on with.
json invoke(Caller& caller, const Hook& hook, bool mutating, const std::string& invocationVersion, const json& object) {
  try {
    return caller.call(hook, mutating, invocationVersion, object);
  } catch (const CallFailure& failure) {
    const std::string name = hook.name();
    const std::string message = "failed calling webhook " + goQuote(name) + ": " + failure.reason;
    if (stringMember(hook.spec, "failurePolicy", "Fail") == "Ignore") {
      log::warn(logger(), "admission webhook failed, failing open (failurePolicy Ignore)",
                {{"webhook", name}, {"configuration", hook.configuration}, {"error", message}});
      return object;
    }
    log::warn(logger(), "admission webhook failed, failing closed (failurePolicy Fail)",
              {{"webhook", name}, {"configuration", hook.configuration}, {"error", message}});
    throw ApiError::internal(message);
  }
}

bool isWebhookConfiguration(const ResourceRef& ref) {
  return ref.group == kAdmissionGroup &&
         (ref.plural == "mutatingwebhookconfigurations" || ref.plural == "validatingwebhookconfigurations");
}

}  // namespace

void ServiceResolver::expose(const std::string& ns, const std::string& name, int servicePort, std::string host,
                             int port) {
  std::lock_guard lock(mutex_);
  endpoints_[{ns, name, servicePort}] = {std::move(host), port};
}

std::optional<std::string> ServiceResolver::resolve(const std::string& ns, const std::string& name,
                                                    int servicePort) const {
  std::lock_guard lock(mutex_);
  const auto it = endpoints_.find({ns, name, servicePort});
  if (it == endpoints_.end()) return std::nullopt;
  return "https://" + hostPort(it->second.first, it->second.second);
}

AdmissionChain::AdmissionChain(ObjectStore& store, const ServiceResolver& resolver)
    : store_(store), resolver_(resolver) {}

bool AdmissionChain::hasWebhooks() const {
  for (const char* plural : {"mutatingwebhookconfigurations", "validatingwebhookconfigurations"})
    if (!store_.list(kAdmissionGroup, plural, "", nullptr).items.empty()) return true;
  return false;
}

nlohmann::json AdmissionChain::admit(const AdmissionAttributes& attributes, std::vector<std::string>* warnings) {
  json object = attributes.object;
  // kube-apiserver never sends webhook configurations to webhooks (one could lock itself out).
  if (isWebhookConfiguration(attributes.ref)) return object;
  Caller caller(attributes, resolver_, warnings);

  // Mutating webhooks, then those with reinvocationPolicy IfNeeded once more when a later
  // webhook changed the object after they ran (kube-apiserver's reinvocation round).
  const auto mutating = hooksOf(store_, "mutatingwebhookconfigurations");
  std::vector<bool> invokedReinvocable(mutating.size(), false);
  std::vector<bool> reinvoke(mutating.size(), false);
  bool anyReinvoke = false;
  for (std::size_t i = 0; i < mutating.size(); ++i) {
    const auto version = shouldCall(mutating[i].spec, attributes, caller.version(), object, store_);
    if (!version || !caller.conditionsHold(mutating[i], *version, object)) continue;
    json next = invoke(caller, mutating[i], true, *version, object);
    if (next != object) {
      for (std::size_t j = 0; j < i; ++j) {
        if (invokedReinvocable[j]) reinvoke[j] = anyReinvoke = true;
      }
      object = std::move(next);
    }
    if (stringMember(mutating[i].spec, "reinvocationPolicy", "Never") == "IfNeeded") invokedReinvocable[i] = true;
  }
  for (std::size_t i = 0; anyReinvoke && i < mutating.size(); ++i) {
    if (!reinvoke[i]) continue;
    const auto version = shouldCall(mutating[i].spec, attributes, caller.version(), object, store_);
    if (version && caller.conditionsHold(mutating[i], *version, object))
      object = invoke(caller, mutating[i], true, *version, object);
  }

  for (const auto& hook : hooksOf(store_, "validatingwebhookconfigurations")) {
    const auto version = shouldCall(hook.spec, attributes, caller.version(), object, store_);
    if (version && caller.conditionsHold(hook, *version, object)) invoke(caller, hook, false, *version, object);
  }
  return object;
}

}  // namespace mka::sandbox
