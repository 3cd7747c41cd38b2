#include "cluster_http.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <vector>

#include "log.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/common/strings.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/http_server.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/protobuf.h"
#include "mka/yaml/json.h"
#include "rendering.h"
#include "reviews.h"
#include "table.h"

namespace mka::sandbox {
namespace {

// kube-apiserver's x509 authenticator: a client certificate that verified against the
// cluster's client CA during the handshake (HttpServer asks for one when clientCaPem is set)
// authenticates its subject's CN, the user returned; nullopt without one.
std::optional<std::string> verifiedClientCertificate(const httplib::Request& req) {
  if (req.ssl == nullptr) return std::nullopt;
  X509* peer = SSL_get_peer_certificate(req.ssl);
  if (peer == nullptr) return std::nullopt;
  std::optional<std::string> user;
  if (SSL_get_verify_result(req.ssl) == X509_V_OK) {
    char cn[256] = {};
    const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
    user = n > 0 ? std::string(cn, static_cast<std::size_t>(n)) : std::string();
  }
  X509_free(peer);
  return user;
}

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// The version kubectl sees; 1.32 matches the kubectl we test with (no skew warning).
const json kServerVersion = {{"major", "1"},
                             {"minor", "32"},
                             {"gitVersion", "v1.32.0"},
                             {"gitCommit", "0000000000000000000000000000000000000000"},
                             {"gitTreeState", "clean"},
                             {"buildDate", "2024-12-11T00:00:00Z"},
                             {"goVersion", "go1.23.3"},
                             {"compiler", "gc"},
                             {"platform", "linux/amd64"}};

// Regular answers: plain application/json, which kubectl reads as legacy discovery. Watch
// streams carry a charset parameter: httplib gzips exactly "application/json" for clients that
// accept gzip (Go's do), and its gzip stream only flushes at the end, which would hold every
// event back until the watch ends. Clients parse the media type, so both read as JSON.
constexpr const char* kJson = "application/json";
constexpr const char* kJsonStream = "application/json; charset=utf-8";
// Longest wait between checks that a watching client is still there.
constexpr std::chrono::milliseconds kWatchPoll{500};
// A watch sends the events waiting for it together, in chunks up to about this size.
constexpr std::size_t kWatchBatchBytes = 64 * 1024;

std::string dumpJson(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

void writeJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dumpJson(body), kJson);
}

void writeError(httplib::Response& res, const ApiError& error) {
  writeJson(res, error.code(), error.status());
  if (error.code() == 429) {
    int retryAfter = 1;
    if (error.details().is_object() && error.details().contains("retryAfterSeconds") &&
        error.details().at("retryAfterSeconds").is_number_integer()) {
      retryAfter = error.details().at("retryAfterSeconds").get<int>();
    }
    res.set_header("Retry-After", std::to_string(retryAfter));
  }
}

ApiError notFoundPath() {
  return {404, "NotFound", "the server could not find the requested resource", json::object()};
}

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// "application/merge-patch+json; charset=utf-8" -> "application/merge-patch+json".
std::string mediaType(const std::string& contentType) {
  std::string out = contentType.substr(0, contentType.find(';'));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  while (!out.empty() && out.front() == ' ') out.erase(out.begin());
  return strings::toLower(out);
}

// strconv.ParseBool, which kube-apiserver uses for boolean query parameters.
bool parseBoolParam(const std::string& name, const std::string& value) {
  if (value == "1" || value == "t" || value == "T" || value == "true" || value == "TRUE" || value == "True") {
    return true;
  }
  if (value.empty() || value == "0" || value == "f" || value == "F" || value == "false" || value == "FALSE" ||
      value == "False") {
    return false;
  }
  throw ApiError::badRequest(name + ": invalid value \"" + value + "\": must be true or false");
}

std::int64_t parseIntParam(const std::string& name, const std::string& value) {
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc{} || end != value.data() + value.size()) {
    throw ApiError::badRequest(name + ": invalid value \"" + value + "\": must be an integer");
  }
  return out;
}

std::string param(const httplib::Request& req, const char* name) {
  return req.has_param(name) ? req.get_param_value(name) : std::string();
}

bool dryRunParam(const httplib::Request& req) {
  bool dryRun = false;
  const std::size_t count = req.get_param_value_count("dryRun");
  for (std::size_t i = 0; i < count; ++i) {
    const std::string value = req.get_param_value("dryRun", i);
    if (value != "All") {
      throw ApiError::invalid(
          "DryRun", "", {FieldError{"dryRun", "Unsupported value: \"" + value + "\"", "supported values: \"All\""}});
    }
    dryRun = true;
  }
  return dryRun;
}

// `warnings` collects what the write answers in Warning headers (warnTo).
WriteOptions writeOptions(const httplib::Request& req, std::vector<std::string>& warnings) {
  WriteOptions options;
  options.warnings = &warnings;
  options.dryRun = dryRunParam(req);
  options.fieldManager = param(req, "fieldManager");
  options.force = parseBoolParam("force", param(req, "force"));
  options.fieldValidation = param(req, "fieldValidation");
  return options;
}

// A POST or PUT body: JSON, or YAML as kubectl may send it.
json decodeBody(const httplib::Request& req) {
  const std::string type = mediaType(req.get_header_value("Content-Type"));
  json body;
  if (type.empty() || type == "application/json" || type == "*/*") {
    try {
      body = json::parse(req.body);
    } catch (const json::exception& e) {
      throw ApiError::badRequest(std::string("the request body is not valid JSON: ") + e.what() +
                                 ": send one JSON object (or YAML with Content-Type: application/yaml)");
    }
  } else if (type == "application/yaml") {
    std::vector<json> documents;
    try {
      documents = yaml::parseJson(req.body, yaml::Limits::forManifests());
    } catch (const Error& e) {
      throw ApiError::badRequest(std::string("the request body is not valid YAML: ") + e.what());
    }
    if (documents.size() != 1) {
      throw ApiError::badRequest("the request body holds " + std::to_string(documents.size()) +
                                 " YAML documents: send exactly one object per request");
    }
    body = std::move(documents.front());
  } else if (type == "application/vnd.kubernetes.protobuf") {
    body = decodeKubernetesProtobuf(req.body);  // kubectl's typed commands (create namespace, ...)
  } else {
    throw ApiError::unsupportedMediaType(type);
  }
  if (!body.is_object()) {
    throw ApiError::badRequest("the request body must be a JSON object (an API object), not " +
                               std::string(body.type_name()));
  }
  return body;
}

DeleteOptions deleteOptions(const httplib::Request& req) {
  DeleteOptions options;
  options.dryRun = dryRunParam(req);
  options.propagationPolicy = param(req, "propagationPolicy");
  if (req.has_param("orphanDependents") && options.propagationPolicy.empty()) {
    options.propagationPolicy =
        parseBoolParam("orphanDependents", param(req, "orphanDependents")) ? "Orphan" : "Background";
  }
  if (req.body.empty()) return options;
  json body;
  if (mediaType(req.get_header_value("Content-Type")) == "application/vnd.kubernetes.protobuf") {
    body = decodeKubernetesProtobuf(req.body);
  } else {
    try {
      body = json::parse(req.body);
    } catch (const json::exception& e) {
      throw ApiError::badRequest(std::string("the DeleteOptions in the request body are not valid JSON: ") + e.what());
    }
  }
  if (body.is_null()) return options;
  if (!body.is_object()) throw ApiError::badRequest("the DeleteOptions in the request body must be a JSON object");
  if (auto it = body.find("propagationPolicy"); it != body.end() && it->is_string()) {
    options.propagationPolicy = it->get<std::string>();
  } else if (auto orphan = body.find("orphanDependents"); orphan != body.end() && orphan->is_boolean()) {
    options.propagationPolicy = orphan->get<bool>() ? "Orphan" : "Background";
  }
  if (auto it = body.find("preconditions"); it != body.end() && it->is_object()) {
    if (auto uid = it->find("uid"); uid != it->end() && uid->is_string()) {
      options.preconditionUid = uid->get<std::string>();
    }
    if (auto rv = it->find("resourceVersion"); rv != it->end() && rv->is_string()) {
      options.preconditionResourceVersion = rv->get<std::string>();
    }
  }
  if (auto it = body.find("dryRun"); it != body.end() && it->is_array()) {
    for (const auto& v : *it) {
      if (v != "All") {
        throw ApiError::invalid("DryRun", "",
                                {FieldError{"dryRun", "Unsupported value: " + v.dump(), "supported values: \"All\""}});
      }
      options.dryRun = true;
    }
  }
  return options;
}

// The stream's peer closed its side (or the connection broke): nobody reads the watch.
bool peerGone(const httplib::Request& req) {
  if (req.ssl == nullptr) return false;
  const int fd = SSL_get_fd(req.ssl);
  if (fd < 0) return true;
  pollfd p{fd, static_cast<short>(POLLRDHUP), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace

// Where a request goes, decided from its method, path and query alone.
struct ClusterHttp::Route {
  enum class Kind {
    NotFound,
    Version,
    Health,
    ApiVersions,
    ApiGroupList,
    ApiGroup,
    ResourceList,
    OpenApiRoot,
    OpenApiGroupVersion,
    Resource,
  };
  Kind kind = Kind::NotFound;
  bool isPublic = false;  // served without a token, as kube-apiserver's system:public-info-viewer
  std::string group;
  std::string version;
  ResourceRef ref;
  ResourceTypePtr type;
  std::string verb;               // RBAC's: get, list, watch, create, update, patch, delete, deletecollection
  std::optional<ApiError> error;  // a malformed query, answered once the client is authenticated
};

// One watch being streamed: the store's Watch plus what the encoder needs.
struct ClusterHttp::WatchStream {
  std::uint64_t id = 0;
  std::shared_ptr<ObjectStore::Watch> watch;         // null for a stream that only carries an error
  std::optional<json> error;                         // a Status to send as the only event
  std::deque<std::pair<std::string, json>> initial;  // sendInitialEvents: sent before the watch's events
  SteadyClock::time_point deadline;
  std::string kind;
  std::string apiVersion;
  bool bookmarks = false;
  Rendering rendering = Rendering::Object;  // of each event's object (not of ERROR's Status)
  TableObjects tableObjects = TableObjects::Metadata;
  ResourceTypePtr type;
  std::string version;
};

ClusterHttp::ClusterHttp(ClusterHttpOptions options, std::shared_ptr<net::CertificateReloader> certificates,
                         ClusterApi& api, FaultInjector& faults, const Clock& clock)
    : options_(std::move(options)),
      certificates_(std::move(certificates)),
      api_(api),
      faults_(faults),
      clock_(clock),
      port_(options_.port) {}

ClusterHttp::~ClusterHttp() { stop(); }

int ClusterHttp::start() {
  if (server_ && server_->running()) return port_;
  net::ServerOptions serverOptions;
  serverOptions.name = options_.clusterName;
  serverOptions.host = options_.host;
  serverOptions.port = port_.load() > 0 ? port_.load() : options_.port;
  serverOptions.maxThreads = options_.maxThreads;
  // kubectl and client-go keep connections for minutes between requests.
  serverOptions.keepAliveTimeout = std::chrono::seconds{300};
  serverOptions.readTimeout = std::chrono::seconds{60};
  serverOptions.writeTimeout = std::chrono::seconds{30};
  serverOptions.payloadMaxLength = 16 * 1024 * 1024;  // big CRDs (Kueue's Workload is ~0.5 MB)
  serverOptions.clientCaPem = options_.clientCaPem;
  auto server = std::make_unique<net::HttpServer>(serverOptions, certificates_);
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); };
  server->handleEverything(handler);
  server->setLogger([name = options_.clusterName](const httplib::Request& req, const httplib::Response& res) {
    log::debug(logger(), "request",
               {{"cluster", name},
                {"method", req.method},
                {"path", req.path},
                {"query", req.target.find('?') == std::string::npos ? "" : req.target.substr(req.target.find('?') + 1)},
                {"status", res.status},
                {"peer", req.remote_addr + ":" + std::to_string(req.remote_port)}});
  });
  stopping_ = false;
  const int port = server->start();
  port_ = port;
  server_ = std::move(server);
  log::info(logger(), "cluster serving",
            {{"cluster", options_.clusterName}, {"server", "https://" + options_.host + ":" + std::to_string(port)}});
  return port;
}

void ClusterHttp::stop() {
  if (!server_) return;
  stopping_ = true;
  // HttpServer::stop() waits for in-flight requests: end what would keep them going.
  std::vector<std::shared_ptr<WatchStream>> open;
  {
    std::lock_guard lock(watchesMutex_);
    for (auto& [id, weak] : watches_) {
      if (auto stream = weak.lock()) open.push_back(std::move(stream));
    }
  }
  for (auto& stream : open) {
    if (stream->watch) stream->watch->close();
  }
  faults_.cancelDelays();
  server_->stop();
  server_.reset();
  log::info(logger(), "cluster stopped", {{"cluster", options_.clusterName}, {"port", port_.load()}});
}

bool ClusterHttp::running() const { return server_ && server_->running(); }

std::size_t ClusterHttp::openWatches() const {
  std::lock_guard lock(watchesMutex_);
  return watches_.size();
}

std::uint64_t ClusterHttp::watchesStarted() const {
  std::lock_guard lock(watchesMutex_);
  return nextWatchId_;
}

std::size_t ClusterHttp::openConnections() const { return server_ ? server_->openConnections() : 0; }

std::vector<std::string> ClusterHttp::invalidWrites() const {
  std::lock_guard lock(invalidMutex_);
  return invalidWrites_;
}

void ClusterHttp::recordRequests(bool on) {
  std::lock_guard lock(recordedMutex_);
  recording_ = on;
  if (on) recorded_.clear();
}

std::vector<RecordedRequest> ClusterHttp::recordedRequests() const {
  std::lock_guard lock(recordedMutex_);
  return {recorded_.begin(), recorded_.end()};
}

void ClusterHttp::registerWatch(const std::shared_ptr<WatchStream>& stream) {
  {
    std::lock_guard lock(watchesMutex_);
    stream->id = ++nextWatchId_;
    watches_[stream->id] = stream;
  }
  // stop() may have collected the open watches just before this one registered.
  if (stopping_ && stream->watch) stream->watch->close();
}

void ClusterHttp::unregisterWatch(std::uint64_t id) {
  std::lock_guard lock(watchesMutex_);
  watches_.erase(id);
}

// What the method, path and query name, before anything is checked.
ClusterHttp::Route ClusterHttp::routeOf(const httplib::Request& req) {
  Route route;
  const auto parts = splitPath(req.path);
  const std::size_t n = parts.size();
  const bool isGet = req.method == "GET" || req.method == "HEAD";
  if (n == 1 && parts[0] == "version") {
    route.kind = Route::Kind::Version;
    route.isPublic = true;
  } else if (n >= 1 && (parts[0] == "healthz" || parts[0] == "readyz" || parts[0] == "livez")) {
    route.kind = Route::Kind::Health;
    route.isPublic = true;
  } else if (n >= 1 && n <= 2 && parts[0] == "api") {
    route.kind = n == 1 ? Route::Kind::ApiVersions : Route::Kind::ResourceList;
    if (n == 2) route.version = parts[1];
  } else if (n >= 1 && n <= 3 && parts[0] == "apis") {
    route.kind = n == 1 ? Route::Kind::ApiGroupList : n == 2 ? Route::Kind::ApiGroup : Route::Kind::ResourceList;
    if (n >= 2) route.group = parts[1];
    if (n == 3) route.version = parts[2];
  } else if (n >= 2 && parts[0] == "openapi" && parts[1] == "v3") {
    if (n == 2) {
      route.kind = Route::Kind::OpenApiRoot;
    } else if (n == 4 && parts[2] == "api") {
      route.kind = Route::Kind::OpenApiGroupVersion;
      route.version = parts[3];
    } else if (n == 5 && parts[2] == "apis") {
      route.kind = Route::Kind::OpenApiGroupVersion;
      route.group = parts[3];
      route.version = parts[4];
    }
  } else if ((n >= 3 && parts[0] == "api") || (n >= 4 && parts[0] == "apis")) {
    route.kind = Route::Kind::Resource;
    std::size_t at = 1;
    if (parts[0] == "apis") route.group = parts[at++];
    route.version = parts[at++];
    std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(at), parts.end());
    bool watchPrefix = false;
    if (!rest.empty() && rest[0] == "watch") {  // legacy /api/v1/watch/namespaces/ns/configmaps
      watchPrefix = true;
      rest.erase(rest.begin());
    }
    ResourceRef& ref = route.ref;
    ref.group = route.group;
    ref.version = route.version;
    if (!rest.empty() && rest[0] == "namespaces" && rest.size() >= 2) {
      // kube-apiserver's RequestInfo: /namespaces/<ns>/<plural>/... is inside a namespace,
      // /namespaces/<name>[/status|/finalize] is the Namespace itself.
      const bool namespaceItself =
          rest.size() == 2 || (route.group.empty() && (rest[2] == "status" || rest[2] == "finalize"));
      if (!namespaceItself) {
        ref.namespace_ = rest[1];
        rest.erase(rest.begin(), rest.begin() + 2);
      }
    }
    if (rest.empty() || rest.size() > 3) {
      route.kind = Route::Kind::NotFound;
    } else {
      ref.plural = rest[0];
      if (rest.size() >= 2) ref.name = rest[1];
      if (rest.size() == 3) ref.subresource = rest[2];
      bool watch = watchPrefix;
      if (req.has_param("watch")) {
        try {
          watch = watch || parseBoolParam("watch", param(req, "watch"));
        } catch (const ApiError& e) {
          route.error = e;  // answered after authentication
        }
      }
      if (isGet) {
        route.verb = watch ? "watch" : ref.name.empty() ? "list" : "get";
      } else if (watchPrefix) {
        route.kind = Route::Kind::NotFound;
      } else if (req.method == "POST") {
        route.verb = "create";
      } else if (req.method == "PUT") {
        route.verb = "update";
      } else if (req.method == "PATCH") {
        route.verb = "patch";
      } else if (req.method == "DELETE") {
        route.verb = ref.name.empty() ? "deletecollection" : "delete";
      } else {
        route.kind = Route::Kind::NotFound;
      }
    }
  }
  return route;
}

void ClusterHttp::handle(const httplib::Request& req, httplib::Response& res) {
  const auto arrived = SteadyClock::now();
  try {
    const Route route = routeOf(req);
    const bool isGet = req.method == "GET" || req.method == "HEAD";
    // Authentication, as kube-apiserver: before anything else, also for unknown paths.
    if (!route.isPublic) {
      const std::string authorization = req.get_header_value("Authorization");
      const std::string prefix = "bearer ";
      const bool tokenOk = authorization.size() > prefix.size() &&
                           strings::toLower(authorization.substr(0, prefix.size())) == prefix &&
                           authorization.substr(prefix.size()) == options_.token;
      // Another bearer token: a ServiceAccount's, from a Secret the token controller filled.
      const bool otherToken = !tokenOk && options_.authenticateToken && authorization.size() > prefix.size() &&
                              strings::toLower(authorization.substr(0, prefix.size())) == prefix;
      const auto serviceAccountUser =
          otherToken ? options_.authenticateToken(authorization.substr(prefix.size())) : std::nullopt;
      const auto certificateUser = tokenOk || serviceAccountUser ? std::nullopt : verifiedClientCertificate(req);
      if (!tokenOk && !serviceAccountUser && !certificateUser) {
        log::debug(logger(), "request unauthorized",
                   {{"cluster", options_.clusterName},
                    {"method", req.method},
                    {"path", req.path},
                    {"peer", req.remote_addr + ":" + std::to_string(req.remote_port)},
                    {"reason",
                     authorization.empty() ? "no Authorization header or client certificate" : "wrong bearer token"}});
        throw ApiError::unauthorized();
      }
      if (recording_ && route.kind == Route::Kind::Resource) {
        const auto& ref = route.ref;
        std::string createdName;
        if (route.verb == "create") {
          try {
            createdName = json_fields::metadataString(decodeBody(req), "name");
          } catch (const std::exception&) {
            // a body the create refuses below: recorded without a name
          }
        }
        std::lock_guard lock(recordedMutex_);
        recorded_.insert({serviceAccountUser.value_or(certificateUser.value_or("")), req.get_header_value("User-Agent"),
                          route.verb, ref.group, ref.plural, ref.subresource, ref.namespace_, ref.name,
                          std::move(createdName)});
      }
    }
    if (route.error) throw *route.error;

    // Faults: decided on arrival, then the latency, then the injected answer.
    const bool resourceRequest = route.kind == Route::Kind::Resource;
    const auto decision =
        faults_.onRequest(resourceRequest ? route.verb : "get", resourceRequest ? route.ref.plural : "",
                          route.ref.subresource, req.get_header_value("User-Agent"));
    faults_.delay(arrived);
    if (decision.hang) faults_.hold();
    if (stopping_) {
      res.set_header("Connection", "close");
      throw ApiError(503, "ServiceUnavailable",
                     "cluster " + options_.clusterName + " is shutting down or unreachable: retry later");
    }
    if (decision.failWith) {
      const int code = *decision.failWith;
      json details = json::object();
      if (code == 429) details["retryAfterSeconds"] = decision.retryAfterSeconds;
      log::info(logger(), "injected fault",
                {{"cluster", options_.clusterName},
                 {"verb", route.verb},
                 {"resource", route.ref.plural},
                 {"subresource", route.ref.subresource},
                 {"code", code}});
      throw ApiError(code, statusReasonFor(code),
                     "injected fault: the sandbox's fault injector answers " + std::to_string(code) + " to " +
                         route.verb + " " + route.ref.plural +
                         (route.ref.subresource.empty() ? "" : "/" + route.ref.subresource) + " in cluster " +
                         options_.clusterName + " (FaultInjector::failNext)",
                     std::move(details));
    }

    if (route.kind == Route::Kind::Resource) {
      if (route.verb == "watch") {
        serveWatch(route, req, res, decision.gone);
      } else {
        serveResource(route, req, res);
      }
    } else {
      if (!isGet && route.kind != Route::Kind::NotFound) {
        throw ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                       json::object());
      }
      serveNonResource(route, req, res);
    }
  } catch (const ApiError& e) {
    if (e.code() == 422) {
      log::info(logger(), "write refused as invalid",
                {{"cluster", options_.clusterName}, {"method", req.method}, {"path", req.path}, {"message", e.what()}});
      constexpr std::size_t kKept = 100;
      std::lock_guard lock(invalidMutex_);
      if (invalidWrites_.size() == kKept) invalidWrites_.erase(invalidWrites_.begin());
      invalidWrites_.push_back(req.method + " " + req.path + ": " + e.what());
    }
    writeError(res, e);
  } catch (const std::exception& e) {
    log::error(logger(), "request failed",
               {{"cluster", options_.clusterName}, {"method", req.method}, {"path", req.path}, {"error", e.what()}});
    writeError(res, ApiError::internal(e.what()));
  }
}

void ClusterHttp::serveNonResource(const Route& route, const httplib::Request& req, httplib::Response& res) {
  ResourceRegistry& registry = api_.registry();
  switch (route.kind) {
    case Route::Kind::Version: writeJson(res, 200, kServerVersion); return;
    case Route::Kind::Health:
      res.status = 200;
      res.set_content("ok", "text/plain; charset=utf-8");
      return;
    case Route::Kind::ApiVersions:
      writeJson(res, 200, registry.apiVersions(options_.host + ":" + std::to_string(port_.load())));
      return;
    case Route::Kind::ApiGroupList: writeJson(res, 200, registry.apiGroupList()); return;
    case Route::Kind::ApiGroup:
      if (auto group = registry.apiGroup(route.group)) {
        writeJson(res, 200, *group);
        return;
      }
      break;
    case Route::Kind::ResourceList:
      if (auto list = registry.apiResourceList(route.group, route.version)) {
        writeJson(res, 200, *list);
        return;
      }
      break;
    case Route::Kind::OpenApiRoot: writeJson(res, 200, registry.openApiV3Root()); return;
    case Route::Kind::OpenApiGroupVersion:
      if (auto doc = registry.openApiV3(route.group, route.version)) {
        // Documents are addressed by their hash: immutable, as kube-apiserver marks them.
        if (req.has_param("hash")) res.set_header("Cache-Control", "public, immutable");
        writeJson(res, 200, *doc);
        return;
      }
      break;
    case Route::Kind::NotFound:
    case Route::Kind::Resource: break;
  }
  throw notFoundPath();
}

std::optional<detail::UserInfo> ClusterHttp::userOf(const std::string& token) const {
  if (token == options_.token) {
    const RequestUser admin;
    return detail::UserInfo{admin.name, admin.groups};
  }
  if (!options_.authenticateToken) return std::nullopt;
  const auto name = options_.authenticateToken(token);
  if (!name) return std::nullopt;
  return detail::UserInfo{*name, detail::serviceAccountGroups(*name)};
}

void ClusterHttp::serveResource(const Route& route, const httplib::Request& req, httplib::Response& res) {
  const ResourceRef& ref = route.ref;
  const ResourceTypePtr type = api_.resolve(ref);  // 404 for what kube-apiserver does not serve
  if (type->namespaced && ref.namespace_.empty() && route.verb == "create") throw notFoundPath();

  // Every answer, written objects too, in the rendering the Accept header asks for, with the
  // write's warnings as kube-apiserver's Warning headers (code 299, RFC 7234).
  const Rendering asked = renderingFor(req.get_header_value("Accept"));
  std::vector<std::string> warnings;
  const auto answer = [&](int status, const json& body, bool isList) {
    for (const auto& w : warnings) res.headers.emplace("Warning", "299 - " + json(w).dump());
    // A Status (what an immediate delete answers) goes as it is, as kube-apiserver sends it.
    const auto kind = body.value("kind", "");
    const Rendering rendering = kind == "Status" ? Rendering::Object : asked;
    checkRenderable(rendering, isList, kind);
    switch (rendering) {
      case Rendering::Object: writeJson(res, status, body); return;
      case Rendering::Table:
        writeJson(res, status,
                  toTable(*type, ref.version, body, clock_.now(), parseIncludeObject(param(req, "includeObject"))));
        return;
      case Rendering::PartialObjectMetadata:
        res.status = status;
        res.set_content(partialObjectMetadataText(body), kJson);
        return;
      case Rendering::PartialObjectMetadataList: writeJson(res, status, partialObjectMetadataList(body)); return;
    }
  };

  if (route.verb == "get") {
    answer(200, *api_.getShared(ref), false);
  } else if (route.verb == "list") {
    ListOptions options;
    options.labelSelector = param(req, "labelSelector");
    options.fieldSelector = param(req, "fieldSelector");
    if (req.has_param("limit")) {
      const std::int64_t limit = parseIntParam("limit", param(req, "limit"));
      options.limit = limit > 0 ? static_cast<std::size_t>(limit) : 0;
    }
    options.continueToken = param(req, "continue");
    options.resourceVersion = param(req, "resourceVersion");
    options.resourceVersionMatch = param(req, "resourceVersionMatch");
    answer(200, api_.list(ref, options), true);
  } else if (route.verb == "create" && ref.group == "authentication.k8s.io" && ref.plural == "tokenreviews") {
    answer(201, detail::answerTokenReview(decodeBody(req), [this](const std::string& token) { return userOf(token); }),
           false);
  } else if (route.verb == "create" && ref.group == "authorization.k8s.io" && ref.plural == "subjectaccessreviews") {
    answer(201, detail::answerSubjectAccessReview(api_, decodeBody(req)), false);
  } else if (route.verb == "create") {
    if (!ref.name.empty()) throw ApiError::methodNotSupported(type->qualifiedResource(), "create");
    answer(201, *api_.create(ref, decodeBody(req), writeOptions(req, warnings)), false);
  } else if (route.verb == "update") {
    answer(200, *api_.update(ref, decodeBody(req), writeOptions(req, warnings)), false);
  } else if (route.verb == "patch") {
    const std::string contentType = mediaType(req.get_header_value("Content-Type"));
    bool created = false;
    auto stored = api_.patch(ref, contentType, req.body, writeOptions(req, warnings), &created);
    answer(created ? 201 : 200, *stored, false);
  } else if (route.verb == "delete") {
    answer(200, *api_.remove(ref, deleteOptions(req)), false);
  } else if (route.verb == "deletecollection") {
    ListOptions selection;
    selection.labelSelector = param(req, "labelSelector");
    selection.fieldSelector = param(req, "fieldSelector");
    answer(200, api_.removeCollection(ref, selection, deleteOptions(req)), true);
  } else {
    throw ApiError::methodNotSupported(type->qualifiedResource(), route.verb);
  }
}

void ClusterHttp::serveWatch(const Route& route, const httplib::Request& req, httplib::Response& res, bool injectGone) {
  const ResourceRef& ref = route.ref;  // with a name: a watch on that one object
  if (!ref.subresource.empty()) throw notFoundPath();
  const ResourceTypePtr type = api_.resolve(ref);

  ListOptions options;
  options.labelSelector = param(req, "labelSelector");
  options.fieldSelector = param(req, "fieldSelector");
  const std::string resourceVersion = param(req, "resourceVersion");
  std::chrono::seconds timeout = options_.defaultWatchTimeout;
  if (req.has_param("timeoutSeconds")) {
    const std::int64_t seconds = parseIntParam("timeoutSeconds", param(req, "timeoutSeconds"));
    if (seconds > 0) timeout = std::chrono::seconds{seconds};
  }

  auto stream = std::make_shared<WatchStream>();
  stream->deadline = SteadyClock::now() + timeout;
  stream->rendering = renderingFor(req.get_header_value("Accept"));
  if (stream->rendering == Rendering::PartialObjectMetadataList)
    throw ApiError::notAcceptable(
        "you requested PartialObjectMetadataList, but a watch sends single objects: ask for "
        "PartialObjectMetadata");
  const bool metadataOnly = stream->rendering == Rendering::PartialObjectMetadata;
  // Bookmarks carry the kind of the events' objects.
  stream->kind = metadataOnly ? "PartialObjectMetadata" : type->kind;
  stream->apiVersion = metadataOnly ? "meta.k8s.io/v1" : apiVersionOf(type->group, ref.version);
  stream->bookmarks =
      req.has_param("allowWatchBookmarks") && parseBoolParam("allowWatchBookmarks", param(req, "allowWatchBookmarks"));
  if (stream->rendering == Rendering::Table) stream->tableObjects = parseIncludeObject(param(req, "includeObject"));
  stream->type = type;
  stream->version = ref.version;
  const bool sendInitialEvents =
      req.has_param("sendInitialEvents") && parseBoolParam("sendInitialEvents", param(req, "sendInitialEvents"));
  if (sendInitialEvents) {  // kube-apiserver's validation of a WatchList request
    FieldErrors causes;
    if (param(req, "resourceVersionMatch") != "NotOlderThan") {
      causes.push_back({"resourceVersionMatch", "Forbidden",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"});
    }
    if (!stream->bookmarks) {
      causes.push_back(
          {"allowWatchBookmarks", "Forbidden", "sendInitialEvents requires setting allowWatchBookmarks to true"});
    }
    if (!causes.empty()) throw ApiError::invalid("ListOptions.meta.k8s.io", "", causes);
  }

  // kube-apiserver answers a watch it has accepted with 200 even when it cannot serve it: a
  // too-old resourceVersion arrives as an ERROR event carrying a 410 Expired Status.
  if (injectGone) {
    log::info(logger(), "injected fault",
              {{"cluster", options_.clusterName}, {"verb", "watch"}, {"resource", ref.plural}, {"code", 410}});
    stream->error =
        ApiError::gone("too old resource version: " + (resourceVersion.empty() ? "0" : resourceVersion) + " (" +
                       std::to_string(api_.store().resourceVersion()) + "): injected fault in cluster " +
                       options_.clusterName + " (FaultInjector::goneOnNextWatch)")
            .status();
  } else {
    try {
      ObjectStore::WatchOptions watchOptions;
      if (stream->bookmarks) watchOptions.bookmarkInterval = options_.bookmarkInterval;
      watchOptions.deadline = stream->deadline;
      std::string from = resourceVersion;
      if (sendInitialEvents) {
        // The state as of now, then a bookmark saying the initial events are complete, then
        // the changes after it: what a WatchList client (client-go's reflector) waits for.
        ListOptions listOptions = options;
        if (!ref.name.empty()) {
          listOptions.fieldSelector =
              "metadata.name=" + ref.name + (options.fieldSelector.empty() ? "" : "," + options.fieldSelector);
        }
        ResourceRef collection = ref;
        collection.name.clear();
        json list = api_.list(collection, listOptions);
        for (auto& item : list["items"]) stream->initial.emplace_back("ADDED", std::move(item));
        from = list["metadata"].value("resourceVersion", "0");
        stream->initial.emplace_back(
            "BOOKMARK",
            json{{"kind", stream->kind},
                 {"apiVersion", stream->apiVersion},
                 {"metadata", {{"resourceVersion", from}, {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}});
      }
      stream->watch = api_.watch(ref, options, from, watchOptions);
    } catch (const ApiError& e) {
      if (e.code() != 410) throw;
      stream->error = e.status();
    }
  }
  registerWatch(stream);

  res.status = 200;
  const httplib::Request* request = &req;  // outlives the response: httplib writes it before returning
  res.set_chunked_content_provider(
      kJsonStream,
      [this, stream, request](std::size_t /*offset*/, httplib::DataSink& sink) {
        // {"type":...,"object":...} written around the object's own encoding, so a shared
        // stored object is serialized in place rather than copied into a wrapper first.
        auto lineOfText = [](const std::string& type, const std::string& object) {
          return "{\"type\":" + dumpJson(json(type)) + ",\"object\":" + object + "}\n";
        };
        auto line = [&](const std::string& type, const json& object) { return lineOfText(type, dumpJson(object)); };
        auto rendered = [&](const std::string& type, const json& object) {
          switch (stream->rendering) {
            case Rendering::Table:
              return line(type, toTable(*stream->type, stream->version, object, clock_.now(), stream->tableObjects));
            case Rendering::PartialObjectMetadata: return lineOfText(type, partialObjectMetadataText(object));
            default: return line(type, object);
          }
        };
        auto send = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
        if (stream->error) {
          if (!send(line("ERROR", *stream->error))) return false;
          sink.done();
          return true;
        }
        if (!stream->initial.empty()) {
          auto [type, object] = std::move(stream->initial.front());
          stream->initial.pop_front();
          return send(type == "ADDED" ? rendered(type, object) : line(type, object));
        }
        auto& watch = *stream->watch;
        // The event as a line; "" for a bookmark the client did not ask for. Sets `end` for an
        // ERROR event, which ends the stream.
        bool end = false;
        auto lineOf = [&](const WatchEvent& event) -> std::string {
          switch (event.type) {
            case EventType::Bookmark: {
              if (!stream->bookmarks) return "";
              json bookmark = *event.object;
              bookmark["kind"] = stream->kind;
              bookmark["apiVersion"] = stream->apiVersion;
              return line("BOOKMARK", bookmark);
            }
            case EventType::Error: end = true; return line("ERROR", *event.object);
            default: return rendered(toString(event.type), *event.object);
          }
        };
        for (;;) {
          const auto now = SteadyClock::now();
          if (stopping_ || watch.closed() || now >= stream->deadline) {
            sink.done();
            return true;
          }
          const auto wait = std::min<std::chrono::milliseconds>(
              kWatchPoll, std::chrono::duration_cast<std::chrono::milliseconds>(stream->deadline - now) +
                              std::chrono::milliseconds{1});
          auto event = watch.next(wait);
          if (!event) {
            if (peerGone(*request)) return false;  // the client left: end quietly
            continue;
          }
          std::string text = lineOf(*event);
          // The events already waiting go out with it, in one chunk: under load a watch then
          // costs one write (one TLS record, one send) per batch instead of one per event, on
          // this side and on the client's. Nothing waits for more to come.
          while (!end && text.size() < kWatchBatchBytes) {
            auto more = watch.next(std::chrono::milliseconds{0});
            if (!more) break;
            text += lineOf(*more);
          }
          if (text.empty()) continue;  // bookmarks nobody asked for
          if (!send(text)) return false;
          if (end) sink.done();
          return true;
        }
      },
      [this, stream](bool /*success*/) {
        if (stream->watch) stream->watch->close();
        unregisterWatch(stream->id);
      });
}

}  // namespace mka::sandbox
