#pragma once
// The HTTPS front of one emulated cluster: what kube-apiserver does between the socket and its
// storage. Bearer-token authentication, discovery, /version, OpenAPI v3, health checks, and
// the resource URLs (/api/v1/..., /apis/<group>/<version>/...) turned into ClusterApi calls:
// get, list, watch (newline-delimited JSON events over a chunked response, bookmarks,
// timeoutSeconds, sendInitialEvents, 410 Gone as an ERROR event), create, update, patch,
// delete, Tables for `kubectl get`, and metav1.Status errors. Fault injection is consulted on every request.
//
// Threads: the owner (Cluster) calls start()/stop(); requests, watches included, run on the
// HttpServer's elastic pool (a thread per connection, so open watches never starve others).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "mka/common/clock.h"
#include "mka/sandbox/cluster_api.h"
#include "mka/sandbox/faults.h"
#include "mka/sandbox/sandbox.h"
#include "reviews.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace mka::net {
class CertificateReloader;
class HttpServer;
}  // namespace mka::net

namespace mka::sandbox {

struct ClusterHttpOptions {
  std::string clusterName;
  std::string host = "127.0.0.1";
  int port = 0;  // 0: a free port on the first start(), then the same one on every restart
  std::string token;
  // Other bearer tokens (the ServiceAccount tokens of the cluster's token controller): the user a
  // token authenticates, or nullopt to refuse it. Unset: `token` only.
  std::function<std::optional<std::string>(const std::string& token)> authenticateToken;
  // CA (PEM) of client certificates accepted as users (x509 authentication: the subject's CN is
  // the user, its O entries the groups); "" accepts bearer tokens only.
  std::string clientCaPem;
  // How often an idle watch that asked for bookmarks gets one (kube-apiserver: about a minute).
  std::chrono::milliseconds bookmarkInterval{std::chrono::seconds{60}};
  // Watch length when the client sends no timeoutSeconds (kube-apiserver: 30-60 minutes).
  std::chrono::seconds defaultWatchTimeout{1800};
  std::size_t maxThreads = 1024;  // connections served at once
};

class ClusterHttp {
 public:
  ClusterHttp(ClusterHttpOptions options, std::shared_ptr<net::CertificateReloader> certificates, ClusterApi& api,
              FaultInjector& faults, const Clock& clock);
  ~ClusterHttp();
  ClusterHttp(const ClusterHttp&) = delete;
  ClusterHttp& operator=(const ClusterHttp&) = delete;

  // Binds and serves; returns the port. Throws mka::Error naming the address when the bind
  // fails. After stop(), start() listens again on the same port.
  int start();
  // Ends every watch it streams and every request held by injected latency, stops accepting,
  // lets in-flight requests finish and closes every connection.
  void stop();
  bool running() const;
  int port() const { return port_.load(); }

  std::size_t openWatches() const;                 // watch streams open now
  std::uint64_t watchesStarted() const;            // watch streams opened since the cluster was made
  std::size_t openConnections() const;             // connections open now (idle keep-alive ones included)
  std::vector<std::string> invalidWrites() const;  // Cluster::invalidWrites
  void recordRequests(bool on);                    // Cluster::recordRequests
  std::vector<RecordedRequest> recordedRequests() const;

 private:
  struct Route;
  struct WatchStream;
  static Route routeOf(const httplib::Request& req);
  void handle(const httplib::Request& req, httplib::Response& res);
  void serveNonResource(const Route& route, const httplib::Request& req, httplib::Response& res);
  void serveResource(const Route& route, const httplib::Request& req, httplib::Response& res);
  // Who a bearer token is (TokenReview): the cluster's token an administrator, a ServiceAccount's
  // token its account.
  std::optional<detail::UserInfo> userOf(const std::string& token) const;
  void serveWatch(const Route& route, const httplib::Request& req, httplib::Response& res, bool injectGone);
  void registerWatch(const std::shared_ptr<WatchStream>& stream);
  void unregisterWatch(std::uint64_t id);

  ClusterHttpOptions options_;
  std::shared_ptr<net::CertificateReloader> certificates_;
  ClusterApi& api_;
  FaultInjector& faults_;
  const Clock& clock_;
  std::unique_ptr<net::HttpServer> server_;  // a fresh one per start()
  std::atomic<int> port_{-1};                // written by start(), read by request threads
  std::atomic<bool> stopping_{false};

  mutable std::mutex invalidMutex_;
  std::vector<std::string> invalidWrites_;  // bounded: the oldest dropped first
  std::atomic<bool> recording_{false};
  mutable std::mutex recordedMutex_;
  std::set<RecordedRequest> recorded_;
  mutable std::mutex watchesMutex_;
  std::map<std::uint64_t, std::weak_ptr<WatchStream>> watches_;
  std::uint64_t nextWatchId_ = 0;
};

}  // namespace mka::sandbox
