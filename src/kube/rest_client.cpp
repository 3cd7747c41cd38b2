#include "mka/kube/rest_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <condition_variable>
#include <fstream>
#include <sstream>
#include <stop_token>
#include <tuple>

#include <httplib.h>
#include <openssl/err.h>

#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/common/validation.h"
#include "mka/net/openssl.h"
#include "mka/net/socket_stream.h"

namespace mka::kube {
namespace {

using SteadyClock = std::chrono::steady_clock;

// client-go re-reads a token file at most once a minute (transport/token_source.go).
constexpr std::chrono::seconds kTokenFileRefresh{60};

// "cluster <name>" (its server when unnamed), how the client's errors name it.
std::string clusterLabel(const RestConfig& config) {
  return "cluster " + (config.cluster.empty() ? config.host : config.cluster);
}

net::OpensslPtr<X509_STORE> caStore(const std::string& pem, const std::string& where) {
  auto store = net::certificateStore(pem);
  if (!store)
    throw Error(where + ": certificate-authority-data holds no PEM certificate: put the API server's CA there");
  return store;
}

std::pair<net::OpensslPtr<X509>, net::OpensslPtr<EVP_PKEY>> parseIdentity(const std::string& certificatePem,
                                                                          const std::string& keyPem,
                                                                          const std::string& where,
                                                                          const std::string& what) {
  net::OpensslPtr<BIO> certBio(BIO_new_mem_buf(certificatePem.data(), static_cast<int>(certificatePem.size())));
  net::OpensslPtr<X509> certificate(PEM_read_bio_X509(certBio.get(), nullptr, nullptr, nullptr));
  net::OpensslPtr<BIO> keyBio(BIO_new_mem_buf(keyPem.data(), static_cast<int>(keyPem.size())));
  net::OpensslPtr<EVP_PKEY> key(PEM_read_bio_PrivateKey(keyBio.get(), nullptr, nullptr, nullptr));
  if (!certificate || !key) throw Error(where + ": " + what + " is not PEM: " + net::opensslErrors());
  return {std::move(certificate), std::move(key)};
}

std::string readTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ApiError(Reason::Unauthorized, 0, "cannot read the bearer token file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return std::string(strings::trim(text.str()));
}

// httplib names its errors in one word ("Write"); say what happened and what to check.
std::string describe(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection: return "cannot connect: is the API server running and reachable?";
    case httplib::Error::ConnectionTimeout: return "connection timed out: is the API server reachable?";
    case httplib::Error::Read: return "the connection broke while reading the answer";
    case httplib::Error::Write: return "the connection broke while sending the request";
    case httplib::Error::SSLConnection: return "TLS handshake failed: check the server URL and TLS settings";
    case httplib::Error::SSLServerVerification:
      return "the server's certificate is not signed by the kubeconfig's CA (or does not name the server)";
    case httplib::Error::SSLLoadingCerts: return "cannot load the CA or client certificate";
    case httplib::Error::Canceled: return "cancelled";
    default: return httplib::to_string(error);
  }
}

bool isRead(const std::string& method) { return method == "GET" || method == "HEAD"; }

std::chrono::milliseconds toMillis(time_t seconds, time_t microseconds) {
  return std::chrono::seconds{seconds} +
         std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::microseconds{microseconds});
}

// An HTTPS client on httplib's ClientImpl: httplib connects the socket, keeps it alive and
// speaks HTTP; this class adds TLS with an SSL_CTX the RestClient shares among its connections.
// httplib's SSLClient makes an SSL_CTX of its own for every connection, some 40 KB each and a
// costly call, and the adapter keeps dozens of connections to its clusters. Each request and
// its answer go through net::SocketStream: the request leaves as one TLS record and one send
// (httplib's own stream sends the headers and the body apart), and the answer is read through a
// buffer (httplib's own stream reads the status line and headers with one SSL_read per byte).
// httplib treats the client as plain HTTP (is_ssl() stays false: its TLS steps are
// SSLClient's); the Host header therefore names the port, which the API server accepts.
//
// Threads: like httplib's client, one request at a time; interrupt() may come from another
// thread.
class TlsClient final : public httplib::ClientImpl {
 public:
  // `context`: the connection's TLS settings (verification, client certificate), shared with
  // the client's other connections; `verdictSink`: the SSL's app data, for the context's verify
  // callback.
  TlsClient(const std::string& host, int port, SSL_CTX* context, void* verdictSink)
      : httplib::ClientImpl(host, port), context_(context), verdictSink_(verdictSink) {
    SSL_CTX_up_ref(context);
    // Every socket httplib makes passes here before it connects.
    set_socket_options([this](socket_t sock) { follow(sock, true); });
  }

  // ClientImpl's destructor closes the socket and knows nothing of TLS.
  ~TlsClient() override {
    {
      std::lock_guard lock(socket_mutex_);
      shutdown_ssl(socket_, true);
    }
    endCall();
  }

  // From beginCall() to endCall() (on the calling thread) the call may be interrupted from
  // another thread: interrupt() shuts its socket down for reading, which wakes every wait of a
  // request but a write into a full socket buffer (bounded by the write timeout): the connect,
  // the handshake and the wait for the answer. Only for reading: after SHUT_WR a write raises
  // SIGPIPE, which ends a process that does not ignore it (OpenSSL writes with write(2)).
  void beginCall() {
    std::lock_guard lock(interruptMutex_);
    inCall_ = true;
    interrupted_ = false;
  }
  // Whether the call was interrupted: then its socket must not carry another request.
  bool endCall() {
    std::lock_guard lock(interruptMutex_);
    const bool interrupted = interrupted_;
    inCall_ = false;
    interrupted_ = false;
    if (followed_ >= 0) ::close(followed_);
    followed_ = -1;
    followedFd_ = -1;
    return interrupted;
  }
  void interrupt() {
    std::lock_guard lock(interruptMutex_);
    interrupted_ = true;
    if (followed_ >= 0) ::shutdown(followed_, SHUT_RD);
  }

 private:
  // Keeps the call's socket `fd` (a new one when `fresh`) as a descriptor of this client's own:
  // httplib may close its descriptor on the calling thread while interrupt() runs, and the
  // number may then name another socket by the time it is shut down; the copy names this
  // socket until endCall(). False once the call was interrupted.
  bool follow(int fd, bool fresh) {
    std::lock_guard lock(interruptMutex_);
    if (!inCall_) return true;
    if (fresh || fd != followedFd_ || followed_ < 0) {
      if (followed_ >= 0) ::close(followed_);
      followed_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      followedFd_ = fd;
    }
    if (interrupted_ && followed_ >= 0) ::shutdown(followed_, SHUT_RD);
    return !interrupted_;
  }

  // Answers are a few KB; what OpenSSL decrypted beyond waits in its record buffer.
  static constexpr std::size_t kReadAhead = 4 * 1024;

  // Called by httplib with socket_mutex_ held, for every new connection.
  bool create_and_connect_socket(Socket& socket, httplib::Error& error) override {
    if (!httplib::ClientImpl::create_and_connect_socket(socket, error)) return false;
    if (handshake(socket)) return true;
    error = httplib::Error::SSLConnection;
    shutdown_ssl(socket, false);
    shutdown_socket(socket);
    close_socket(socket);
    return false;
  }

  // TLS on the connected socket, which stays non-blocking (the stream waits with poll()),
  // within the connection timeout. The certificate is checked during the handshake, by the
  // context's settings.
  bool handshake(Socket& socket) {
    const int flags = ::fcntl(socket.sock, F_GETFL);
    if (flags < 0 || ::fcntl(socket.sock, F_SETFL, flags | O_NONBLOCK) < 0) return false;
    socket.ssl = SSL_new(context_.get());
    if (socket.ssl == nullptr || SSL_set_fd(socket.ssl, socket.sock) != 1) return false;
    SSL_set_app_data(socket.ssl, verdictSink_);
    // SNI names a host, never an address (RFC 6066 section 3).
    if (!validation::isIpLiteral(host_) && SSL_set_tlsext_host_name(socket.ssl, host_.c_str()) != 1) return false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{connection_timeout_sec_} +
                          std::chrono::microseconds{connection_timeout_usec_};
    for (;;) {
      ERR_clear_error();
      const int done = SSL_connect(socket.ssl);
      if (done == 1) return true;
      const int reason = SSL_get_error(socket.ssl, done);
      if (reason != SSL_ERROR_WANT_READ && reason != SSL_ERROR_WANT_WRITE) return false;
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd wait{socket.sock, static_cast<short>(reason == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      if (::poll(&wait, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
    }
  }

  void shutdown_ssl(Socket& socket, bool gracefully) override {
    if (socket.ssl == nullptr) return;
    if (gracefully && SSL_is_init_finished(socket.ssl)) SSL_shutdown(socket.ssl);  // close_notify, best effort
    SSL_free(socket.ssl);
    socket.ssl = nullptr;
  }

  bool process_socket(const Socket& socket, std::function<bool(httplib::Stream&)> callback) override {
    SSL* ssl = socket.ssl;
    // A kept-alive socket was made for an earlier call: this one follows it from here. An
    // interrupt that came before its socket was connected (when a shutdown does nothing)
    // stops it here.
    if (ssl == nullptr || !follow(socket.sock, false)) return false;
    net::SocketStream stream(socket.sock, ssl, host_, port_, toMillis(read_timeout_sec_, read_timeout_usec_),
                             toMillis(write_timeout_sec_, write_timeout_usec_), kReadAhead);
    stream.holdWrites(true);
    const bool ok = callback(stream);
    // httplib closes the connection inside the callback when the answer says "Connection:
    // close" (and frees `ssl`, clearing socket.ssl): the answer is complete, and the stream
    // must not touch the connection again.
    if (socket.ssl != ssl) return ok;
    const bool sent = stream.flush();
    if (stream.hasBufferedInput()) {
      // Bytes beyond the answer: the connection is out of step with its requests.
      std::lock_guard lock(socket_mutex_);
      socket_should_be_closed_when_request_is_done_ = true;
    }
    return ok && sent;
  }

  const net::OpensslPtr<SSL_CTX> context_;
  void* const verdictSink_;
  std::mutex interruptMutex_;
  bool inCall_ = false;
  bool interrupted_ = false;
  int followed_ = -1;    // this client's copy of the call's socket, or -1
  int followedFd_ = -1;  // httplib's descriptor it copies
};

ApiError cancelled(const std::string& what) {
  return ApiError(Reason::Cancelled, 0, what + ": cancelled: the caller is stopping");
}

// Waits `delay`; false (at once) when stop is requested first.
bool sleepUnlessStopped(std::chrono::milliseconds delay, const std::stop_token& stop) {
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  wake.wait_for(lock, stop, delay, [] { return false; });
  return !stop.stop_requested();
}

// RFC 9110 tchar: what a product name, version or comment word may hold without quoting.
std::string asToken(std::string_view text) {
  std::string out(text.empty() ? "unknown" : text);
  for (auto& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
      c = '-';
  return out;
}

}  // namespace

std::string userAgentFor(std::string_view version, std::string_view identity) {
#if defined(__x86_64__)
  constexpr std::string_view arch = "amd64";
#elif defined(__aarch64__)
  constexpr std::string_view arch = "arm64";
#else
  constexpr std::string_view arch = "unknown";
#endif
  return "multikueue-adapter/" + asToken(version) + " (linux/" + std::string(arch) + ") " + asToken(identity);
}

struct RestClient::Connection {
  std::unique_ptr<TlsClient> client;
  std::uint64_t identity = 0;  // the exec plugin's certificate it presents (RestClient::execIdentity_)
  // Why OpenSSL refused the server's certificate in the last handshake (X509_V_OK if it did
  // not); set by the verify callback on the thread that connects.
  std::atomic<long> verifyError{X509_V_OK};

  // OpenSSL's verify callback: keeps its verdict, and remembers why it refused.
  static int recordVerdict(int preverifyOk, X509_STORE_CTX* store) {
    if (preverifyOk == 0) {
      auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
      auto* self = ssl ? static_cast<Connection*>(SSL_get_app_data(ssl)) : nullptr;
      if (self) self->verifyError = X509_STORE_CTX_get_error(store);
    }
    return preverifyOk;
  }

  // httplib's words for a failed request, made precise when the handshake failed because the
  // certificate did not verify.
  std::string describeFailure(httplib::Error error) const {
    const long verdict = verifyError.load();
    if (error == httplib::Error::SSLConnection && verdict != X509_V_OK)
      return describe(httplib::Error::SSLServerVerification) + ": " + X509_verify_cert_error_string(verdict);
    return describe(error);
  }
};

RestClient::RestClient(RestConfig config, ClientOptions options)
    : config_(std::move(config)), options_(std::move(options)) {
  if (options_.qps > 0) limiter_ = std::make_unique<TokenBucket>(options_.qps, std::max(1, options_.burst));
  const std::string where = clusterLabel(config_);
  std::string_view rest = config_.host;
  if (!rest.starts_with("https://"))
    throw Error(where + ": server \"" + config_.host +
                "\" is not an https:// URL: the API server must be reached over TLS");
  rest.remove_prefix(8);
  while (rest.ends_with("/")) rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos)
    throw Error(where + ": server \"" + config_.host + "\" has a path: give the API server's base URL only");
  if (rest.starts_with("[")) {
    auto close = rest.find(']');
    host_ = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
  } else {
    auto colon = rest.find(':');
    host_ = std::string(rest.substr(0, colon));
    rest.remove_prefix(colon == std::string_view::npos ? rest.size() : colon);
  }
  if (rest.starts_with(":")) port_ = std::stoi(std::string(rest.substr(1)));
  serverName_ = config_.tlsServerName.empty() ? host_ : config_.tlsServerName;
  if (!config_.caPem.empty()) caStore_ = caStore(config_.caPem, where);
  if (config_.clientCertificatePem.empty() != config_.clientKeyPem.empty())
    throw Error(where + ": a client certificate needs its key");
  if (!config_.clientCertificatePem.empty())
    std::tie(clientCertificate_, clientKey_) = parseIdentity(config_.clientCertificatePem, config_.clientKeyPem, where,
                                                             "client-certificate-data or client-key-data");
  tlsContext_ = tlsContext(clientCertificate_.get(), clientKey_.get());
  token_ = config_.bearerToken;
  tokenReadAt_ = SteadyClock::now();
  if (config_.insecureSkipTlsVerify)
    log::warn("kube client does not verify the server's certificate",
              {{"cluster", config_.cluster}, {"host", config_.host}});
}

RestClient::~RestClient() {
  if (limiter_) limiter_->stop();
}

net::OpensslPtr<SSL_CTX> RestClient::tlsContext(X509* certificate, EVP_PKEY* key) const {
  const std::string where = clusterLabel(config_);
  net::OpensslPtr<SSL_CTX> context(SSL_CTX_new(TLS_client_method()));
  if (!context) throw Error(where + ": cannot make a TLS context: " + net::opensslErrors());
  SSL_CTX* ctx = context.get();
  // OpenSSL keeps a ~17 KB read and a ~17 KB write buffer per connection for as long as it
  // lives; pooled and watch connections are idle most of the time, so they give them back
  // between records.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  if (certificate != nullptr &&
      (SSL_CTX_use_certificate(ctx, certificate) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1))
    throw Error(where + ": cannot present the client certificate: " + net::opensslErrors());
  if (config_.insecureSkipTlsVerify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return context;
  }
  // With the kubeconfig's CA, client-go trusts that CA alone; without one, the system's CAs.
  // Either way OpenSSL checks the chain and the name during the handshake.
  if (caStore_) {
    SSL_CTX_set1_cert_store(ctx, caStore_.get());  // shared: the SSL_CTX takes a reference
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    throw Error(where + ": cannot load the system's CA certificates: " + net::opensslErrors());
  }
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  const int named = validation::isIpLiteral(serverName_) ? X509_VERIFY_PARAM_set1_ip_asc(param, serverName_.c_str())
                                                         : X509_VERIFY_PARAM_set1_host(param, serverName_.c_str(), 0);
  if (named != 1) throw Error(where + ": cannot verify the server as \"" + serverName_ + "\": " + net::opensslErrors());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, &Connection::recordVerdict);
  return context;
}

std::unique_ptr<RestClient::Connection> RestClient::connect(std::chrono::milliseconds readTimeout) {
  // With tls-server-name the certificate is checked for that name while the socket goes to
  // the server's host: the client verifies (and sends SNI for) the name it was built with, and
  // httplib's address map sends that name to the real host.
  auto connection = std::make_unique<Connection>();
  {
    std::unique_lock identity(execIdentityMutex_, std::defer_lock);
    if (config_.credentials) identity.lock();
    SSL_CTX* context = execContext_ ? execContext_.get() : tlsContext_.get();
    if (execContext_) connection->identity = execIdentity_;
    connection->client = std::make_unique<TlsClient>(serverName_, port_, context, connection.get());
  }
  auto& c = *connection->client;
  if (serverName_ != host_) c.set_hostname_addr_map({{serverName_, host_}});
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
  c.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(
      std::min(options_.timeout, std::chrono::milliseconds{std::chrono::seconds{10}})));
  c.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(readTimeout));
  c.set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(options_.timeout));
  return connection;
}

std::unique_ptr<RestClient::Connection> RestClient::acquire() {
  {
    std::lock_guard lock(poolMutex_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return connect(options_.timeout);
}

void RestClient::release(std::unique_ptr<Connection> connection) {
  if (config_.credentials) {
    // A connection that presents a certificate the plugin has since replaced is closed.
    std::lock_guard lock(execIdentityMutex_);
    if (connection->identity != execIdentity_) return;
  }
  std::lock_guard lock(poolMutex_);
  if (idle_.size() < 16) idle_.push_back(std::move(connection));
}

ExecCredential RestClient::execCredential() {
  ExecCredential credential;
  try {
    credential = config_.credentials->current();
  } catch (const Error& e) {
    throw ApiError(Reason::Unauthorized, 0, "getting credentials: " + std::string(e.what()));
  }
  if (credential.clientCertificatePem.empty()) return credential;
  bool rotated = false;
  {
    std::lock_guard lock(execIdentityMutex_);
    if (credential.clientCertificatePem != execCertificatePem_) {
      std::tie(execCertificate_, execKey_) =
          parseIdentity(credential.clientCertificatePem, credential.clientKeyPem, clusterLabel(config_),
                        "the exec plugin's clientCertificateData or clientKeyData");
      execContext_ = tlsContext(execCertificate_.get(), execKey_.get());
      rotated = !execCertificatePem_.empty();
      execCertificatePem_ = credential.clientCertificatePem;
      ++execIdentity_;
    }
  }
  if (rotated) {
    // client-go closes the connections of a rotated certificate, so none keeps the old one.
    std::lock_guard lock(poolMutex_);
    idle_.clear();
  }
  return credential;
}

std::string RestClient::authorization(const std::optional<ExecCredential>& credential) {
  if (credential) return credential->token.empty() ? std::string{} : "Bearer " + credential->token;
  std::lock_guard lock(tokenMutex_);
  if (!config_.bearerTokenFile.empty() && SteadyClock::now() - tokenReadAt_ >= kTokenFileRefresh) {
    try {
      token_ = readTokenFile(config_.bearerTokenFile);
    } catch (const ApiError& e) {
      log::warn("kube client keeps its previous token", {{"cluster", config_.cluster}, {"error", e.what()}});
    }
    tokenReadAt_ = SteadyClock::now();
  }
  return token_.empty() ? std::string{} : "Bearer " + token_;
}

// client-go's flowcontrol limiter in front of every request. False when `stop` was requested
// first; a client being destroyed stops waiting too, with an error.
bool RestClient::throttle(const std::stop_token& stop) {
  if (stop.stop_requested()) return false;
  if (!limiter_ || limiter_->accept(stop)) return true;
  if (stop.stop_requested()) return false;
  throw ApiError(Reason::Unavailable, 0, "cluster " + config_.cluster + ": the client is shutting down");
}

Response RestClient::request(const std::string& method, const std::string& target, const std::string& body,
                             const std::string& contentType, const std::string& accept, std::stop_token stop) {
  const std::string what = method + " " + config_.host + target;
  if (method != "GET" && method != "POST" && method != "PUT" && method != "PATCH" && method != "DELETE")
    throw Error("kube client: unsupported HTTP method " + method);
  auto backoff = options_.retryBackoff;
  bool refusedOnce = false;
  for (int attempt = 0;; ++attempt) {
    if (!throttle(stop)) throw cancelled(what);
    httplib::Headers headers = {{"Accept", accept}, {"User-Agent", options_.userAgent}};
    std::optional<ExecCredential> credential;
    if (config_.credentials) credential = execCredential();
    if (auto auth = authorization(credential); !auth.empty()) headers.emplace("Authorization", auth);
    auto connection = acquire();
    auto& c = *connection->client;
    ++sent_;
    const auto started = SteadyClock::now();
    if (stop.stop_possible()) c.beginCall();
    httplib::Result result = [&] {
      std::stop_callback interrupt(stop, [&c] { c.interrupt(); });
      if (method == "GET") return c.Get(target, headers);
      if (method == "POST") return c.Post(target, headers, body, contentType);
      if (method == "PUT") return c.Put(target, headers, body, contentType);
      if (method == "PATCH") return c.Patch(target, headers, body, contentType);
      return c.Delete(target, headers, body, contentType);
    }();
    const bool interrupted = c.endCall();
    // An answer that came in full before the stop is the call's answer; anything else of a
    // stopped call is the stop's doing.
    if (!result && stop.stop_requested()) throw cancelled(what);
    // Back to the pool, unless the stop shut its socket down.
    const auto reuse = [&] {
      if (!interrupted) release(std::move(connection));
    };

    std::optional<ApiError> failure;
    bool retryable = false;
    if (!result) {
      const auto error = result.error();
      // httplib reports a read that outlived the timeout as a Read error: tell them apart.
      const bool timedOut = error == httplib::Error::Read && SteadyClock::now() - started >= options_.timeout * 9 / 10;
      failure = timedOut ? ApiError(Reason::Timeout, 0,
                                    what + ": no answer within " + std::to_string(options_.timeout.count()) +
                                        " ms (ClientOptions.timeout)")
                         : ApiError::transport(what, connection->describeFailure(error));
      // A request that never reached the server can always be retried; one that may have
      // (read/write failed midway) only when it is a read.
      retryable = error == httplib::Error::Connection || error == httplib::Error::ConnectionTimeout ||
                  (isRead(method) && (error == httplib::Error::Read || error == httplib::Error::Write));
      if (error == httplib::Error::SSLServerVerification || error == httplib::Error::SSLConnection) retryable = false;
    } else {
      const auto& res = result.value();
      if (res.status >= 200 && res.status < 300) {
        reuse();
        return {res.status, res.body, res.get_header_value("Content-Type")};
      }
      auto error = ApiError::fromResponse(res.status, res.body, what);
      if (res.has_header("Retry-After")) {
        try {
          error = error.withRetryAfter(std::stoi(res.get_header_value("Retry-After")));
        } catch (const std::exception&) {
          // an HTTP date instead of seconds: use our own backoff
        }
      }
      const bool serverSaysRetry = error.retryAfterSeconds() > 0;
      retryable =
          res.status == 429 || ((res.status == 503 || res.status == 504) && (isRead(method) || serverSaysRetry));
      if (res.status == 401 && credential) {
        // The plugin's credential was refused (revoked, or expired early): the next one comes
        // from a new run. The server did nothing with the request, so it is sent once more.
        config_.credentials->refused(*credential);
        if (!refusedOnce) {
          refusedOnce = true;
          reuse();
          continue;
        }
      }
      failure = error;
      reuse();
    }
    if (!retryable || attempt >= options_.maxRetries) throw *failure;
    auto delay = failure->retryAfterSeconds() > 0
                     ? std::chrono::milliseconds{std::chrono::seconds{std::min(failure->retryAfterSeconds(), 30)}}
                     : backoff;
    log::debug("kube client retries",
               {{"request", what}, {"attempt", attempt + 1}, {"delayMs", delay.count()}, {"error", failure->what()}});
    if (!sleepUnlessStopped(delay, stop)) throw cancelled(what);
    backoff = std::min(backoff * 2, options_.retryBackoffCap);
  }
}

void RestClient::stream(const std::string& target, const std::function<bool(std::string_view line)>& onLine,
                        std::stop_token stop, std::chrono::seconds readTimeout) {
  const std::string what = "GET " + config_.host + target;
  if (!throttle(stop)) return;
  std::optional<ExecCredential> credential;
  if (config_.credentials) credential = execCredential();
  auto connection = connect(readTimeout);
  auto& c = *connection->client;
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", options_.userAgent}};
  if (auto auth = authorization(credential); !auth.empty()) headers.emplace("Authorization", auth);
  ++sent_;
  int status = 0;
  std::string errorBody, pending;
  bool stoppedByCallback = false;
  if (stop.stop_possible()) c.beginCall();
  auto result = [&] {
    std::stop_callback interrupt(stop, [&c] { c.interrupt(); });
    return c.Get(
        target, headers,
        [&](const httplib::Response& res) {
          status = res.status;
          return true;
        },
        [&](const char* data, std::size_t length) {
          if (status != 200) {
            errorBody.append(data, length);
            return errorBody.size() < 64 * 1024;
          }
          pending.append(data, length);
          std::size_t start = 0;
          for (auto nl = pending.find('\n', start); nl != std::string::npos; nl = pending.find('\n', start)) {
            std::string_view line(pending.data() + start, nl - start);
            start = nl + 1;
            if (!line.empty() && !onLine(line)) {
              stoppedByCallback = true;
              return false;
            }
          }
          pending.erase(0, start);
          return !stop.stop_requested();
        });
  }();
  c.endCall();
  if (stop.stop_requested() || stoppedByCallback) return;
  if (status == 401 && credential) config_.credentials->refused(*credential);
  if (status != 0 && status != 200) throw ApiError::fromResponse(status, errorBody, what);
  if (!result && status == 0) throw ApiError::transport(what, connection->describeFailure(result.error()));
  // Ended by the server, a timeout or a broken connection after the 200: the caller resumes.
  if (!pending.empty()) onLine(pending);
}

}  // namespace mka::kube
