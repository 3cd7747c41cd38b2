#pragma once
// HTTPS to one Kubernetes API server, as client-go's rest.Client does it: the server verified
// against the kubeconfig's CA (with tls-server-name when set), a bearer token (re-read from
// its file, since projected service-account tokens rotate) or a client certificate,
// connections kept alive and reused, a deadline per request, client-side QPS/burst limiting,
// and retries with backoff for 429/503/504 and connection failures (honouring Retry-After;
// requests that may have reached the server are retried only when they are reads).
//
// Threads: any thread may call request() and stream() concurrently; each call takes a pooled
// connection of its own. A call given a std::stop_token ends soon after stop is requested on
// its source, from any thread (the owner of the calling thread, stopping it): a retry's
// backoff or a rate-limit wait ends at once, and the socket of the request in flight is shut
// down for reading, which ends a connect, a TLS handshake and a wait for the answer alike.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "mka/kube/api_error.h"
#include "mka/kube/exec_credential.h"
#include "mka/kube/kubeconfig.h"
#include "mka/kube/rate_limiter.h"
#include "mka/net/openssl.h"

namespace mka::kube {

struct ClientOptions {
  // controller-runtime's defaults (client-go's own are 5 and 10); qps 0 turns the limit off.
  double qps = 20;
  int burst = 30;
  std::chrono::milliseconds timeout{std::chrono::seconds{30}};  // per request, watches excepted
  int maxRetries = 5;
  std::chrono::milliseconds retryBackoff{200};  // doubles per retry, up to retryBackoffCap
  std::chrono::milliseconds retryBackoffCap{std::chrono::seconds{5}};
  std::string userAgent = "multikueue-adapter";  // serve sends userAgentFor(version, identity)
};

// client-go's "<binary>/<version> (<os>/<arch>) <comment>" with the replica's leader-election
// identity as the comment: replicas of one Deployment share a ServiceAccount, so kube-apiserver's
// audit log (and the sandbox's recorded requests) can tell their calls apart only by this.
// Characters an HTTP token does not allow become '-'.
std::string userAgentFor(std::string_view version, std::string_view identity);

struct Response {
  int status = 0;
  std::string body;
  std::string contentType;
};

class RestClient {
 public:
  // Throws mka::Error when the config cannot be used (not https, bad CA or client key).
  explicit RestClient(RestConfig config, ClientOptions options = {});
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // `target` is the path with its query ("/api/v1/namespaces/a/configmaps?limit=5"); `accept`
  // the Accept header. Returns the 2xx answer; throws ApiError otherwise (after the retries the
  // answer allows), Reason::Cancelled once stop is requested on `stop` (never retried).
  Response request(const std::string& method, const std::string& target, const std::string& body = "",
                   const std::string& contentType = "application/json", const std::string& accept = "application/json",
                   std::stop_token stop = {});

  // A long-lived GET (watch): `onLine` receives each newline-terminated line of the body until
  // the server ends it, `onLine` returns false, or stop is requested on `stop`. Throws
  // ApiError when the answer is not 200 or the server cannot be reached; returns normally when
  // the stream ends for any other reason (the caller resumes, or stops).
  void stream(const std::string& target, const std::function<bool(std::string_view line)>& onLine, std::stop_token stop,
              std::chrono::seconds readTimeout);

  const RestConfig& config() const { return config_; }
  const ClientOptions& options() const { return options_; }
  std::uint64_t requestsSent() const { return sent_.load(); }
  // Calls waiting for the rate limiter's token right now.
  std::size_t throttled() const { return limiter_ ? limiter_->waiting() : 0; }

 private:
  struct Connection;
  std::unique_ptr<Connection> connect(std::chrono::milliseconds readTimeout);
  // The TLS settings connections share: verification as configured, and `certificate` (with
  // `key`) presented when not null. Throws Error naming the cluster.
  net::OpensslPtr<SSL_CTX> tlsContext(X509* certificate, EVP_PKEY* key) const;
  std::unique_ptr<Connection> acquire();
  void release(std::unique_ptr<Connection> connection);
  // The exec plugin's credential (config_.credentials); throws ApiError Unauthorized when the
  // plugin fails, as client-go's "getting credentials: ..." does. A new client certificate
  // becomes the one new connections present, and the idle ones (the old one's) are closed.
  ExecCredential execCredential();
  std::string authorization(const std::optional<ExecCredential>& credential);
  // Waits for the rate limiter's token: false when stop is requested first; throws ApiError
  // when the client is being destroyed.
  bool throttle(const std::stop_token& stop);

  RestConfig config_;
  ClientOptions options_;
  std::string host_;
  int port_ = 443;
  // The name the server's certificate is checked for, and sent as SNI: tls-server-name, or the host.
  std::string serverName_;
  // Parsed once and shared by the client's SSL_CTXs (OpenSSL counts the references), which its
  // connections share in turn: a connection costs no PEM parsing, no copy of the CA and no
  // SSL_CTX of its own.
  net::OpensslPtr<X509_STORE> caStore_;  // null without certificate-authority-data
  net::OpensslPtr<X509> clientCertificate_;
  net::OpensslPtr<EVP_PKEY> clientKey_;
  net::OpensslPtr<SSL_CTX> tlsContext_;  // with clientCertificate_ when there is one
  // The exec plugin's client certificate, parsed once per certificate it hands out; connect()
  // presents it.
  std::mutex execIdentityMutex_;
  std::string execCertificatePem_;
  net::OpensslPtr<X509> execCertificate_;
  net::OpensslPtr<EVP_PKEY> execKey_;
  net::OpensslPtr<SSL_CTX> execContext_;  // with execCertificate_; connections hold their own reference
  std::uint64_t execIdentity_ = 0;        // counts the certificates; a connection of an older one is not pooled
  std::mutex poolMutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::mutex tokenMutex_;
  std::string token_;
  std::chrono::steady_clock::time_point tokenReadAt_{};
  std::unique_ptr<TokenBucket> limiter_;  // null when qps is 0
  std::atomic<std::uint64_t> sent_{0};
};

}  // namespace mka::kube
