#include "mka/net/http_server.h"

#include "mka/net/openssl.h"

#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "listen.h"
#include "log.h"
#include "mka/common/errors.h"
#include "mka/common/thread_cache.h"
#include "mka/common/thread_name.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/socket_stream.h"
#include "mka/net/task_queue.h"

namespace mka::net {
namespace {

// httplib parses requests and routes them; accepting, TLS, keep-alive and shutdown are ours,
// because httplib's own connection loop cannot close idle keep-alive connections on stop()
// (it waits out the keep-alive timeout), polls each idle connection every ~10 ms, listens
// with SO_REUSEPORT (a second server on the same port "succeeds") and a backlog of 5.
// Subclassing reaches the per-request entry point, which httplib keeps protected.
class Engine final : public httplib::Server {
 public:
  bool serveRequest(httplib::Stream& stream, bool closeConnection, bool& connectionClosed, SSL* ssl) {
    return process_request(stream, closeConnection, connectionClosed, [ssl](httplib::Request& req) { req.ssl = ssl; });
  }
  // httplib ends streamed (content-provider) responses once this is invalid.
  void setListening(int fd) { svr_sock_ = fd; }
};

Engine& engine(httplib::Server& server) { return static_cast<Engine&>(server); }

// The stream of the connection this thread serves, for the pre-routing handler, which httplib
// gives only the request.
thread_local SocketStream* tCurrentStream = nullptr;

// httplib 0.11 enforces payload_max_length only with a Content-Length: a chunked body, or a
// POST without Content-Length (read until the client closes), would grow without a bound.
// kube-apiserver, kubelet and Prometheus always send a Content-Length.
const char* framingProblem(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) {
    return "request bodies must be sent with a Content-Length header; Transfer-Encoding is not supported\n";
  }
  if ((req.method == "POST" || req.method == "PUT" || req.method == "PATCH") && !req.has_header("Content-Length")) {
    return "request has no Content-Length header: send the body with its length\n";
  }
  return nullptr;
}

// The body of a request with a Content-Length (framingProblem() refused any other framing),
// read as httplib's read_content reads it. False when the response is written instead: 413
// over `maxLength`, 400 when the body is cut short (which only a client that is still there
// receives); the connection is closed after either.
bool readBody(SocketStream& stream, httplib::Request& req, httplib::Response& res, std::size_t maxLength) {
  const auto header = req.get_header_value("Content-Length");
  if (header.empty()) return true;
  std::uint64_t length = 0;
  const auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), length);
  if (ec != std::errc() || end != header.data() + header.size()) {
    res.status = 400;
    res.set_content("Content-Length is not a number\n", "text/plain; charset=utf-8");
    stream.closeAfterResponse();
    return false;
  }
  if (length > maxLength) {
    res.status = 413;
    res.set_content("request body larger than " + std::to_string(maxLength) + " bytes\n", "text/plain; charset=utf-8");
    stream.closeAfterResponse();
    return false;
  }
  req.body.resize(length);
  for (std::size_t got = 0; got < length;) {
    const auto n = stream.read(req.body.data() + got, length - got);
    if (n <= 0) {
      res.status = 400;
      res.set_content("request body ended before its Content-Length\n", "text/plain; charset=utf-8");
      stream.closeAfterResponse();
      return false;
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

struct HttpServer::Runtime {
  int listenFd = -1;
  int wakeFd = -1;  // eventfd, readable from the moment stop() begins: wakes every wait
  SSL_CTX* tls = nullptr;
  std::unique_ptr<ElasticTaskQueue> pool;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::size_t> open{0};
  std::string address;  // for logs

  ~Runtime() {
    if (listenFd >= 0) ::close(listenFd);
    if (wakeFd >= 0) ::close(wakeFd);
    if (tls != nullptr) SSL_CTX_free(tls);
  }
};

HttpServer::HttpServer(ServerOptions options) : HttpServer(std::move(options), nullptr) {}

HttpServer::HttpServer(ServerOptions options, std::shared_ptr<CertificateReloader> certificates)
    : options_(std::move(options)), certificates_(std::move(certificates)), server_(std::make_unique<Engine>()) {
  server_->set_payload_max_length(options_.payloadMaxLength);
  // Only shape the "Keep-Alive: timeout=…, max=…" response header; our loop enforces them.
  server_->set_keep_alive_max_count(options_.keepAliveMaxCount);
  server_->set_keep_alive_timeout(options_.keepAliveTimeout.count());
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (const char* problem = framingProblem(req)) {
      res.status = 411;
      res.set_content(problem, "text/plain; charset=utf-8");
      res.set_header("Connection", "close");
      // The unread body is still in the socket: the connection cannot carry another request.
      if (tCurrentStream != nullptr) tCurrentStream->closeAfterResponse();
      return httplib::Server::HandlerResponse::Handled;
    }
    if (preRouting_ && preRouting_(req, res)) return httplib::Server::HandlerResponse::Handled;
    if (everything_ && tCurrentStream != nullptr && !req.has_header("Content-Encoding")) {
      // httplib hands its pre-routing handler the request it owns as const, before reading the
      // body into it; routing would read it next, so reading it here is the same.
      auto& request = const_cast<httplib::Request&>(req);
      if (readBody(*tCurrentStream, request, res, options_.payloadMaxLength)) everything_(request, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // An answer's status line, headers and body leave as one TLS record (SocketStream holds the
  // writes of a request until it is answered); a streamed answer (a watch) is sent piece by
  // piece as it is written instead, or its events would wait for the next one.
  server_->set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.content_provider_ && tCurrentStream != nullptr) tCurrentStream->holdWrites(false);
  });
  server_->set_exception_handler(
      [name = options_.name](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unknown exception";
        try {
          if (error) std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        log::error(logger(), "request handler failed",
                   {{"server", name}, {"method", req.method}, {"path", req.path}, {"error", what}});
        res.status = 500;
        res.set_content("internal server error\n", "text/plain; charset=utf-8");
      });
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(std::string_view method, const std::string& pattern, Handler handler) {
  if (method == "GET") {
    server_->Get(pattern, std::move(handler));
  } else if (method == "POST") {
    server_->Post(pattern, std::move(handler));
  } else if (method == "PUT") {
    server_->Put(pattern, std::move(handler));
  } else if (method == "PATCH") {
    server_->Patch(pattern, std::move(handler));
  } else if (method == "DELETE") {
    server_->Delete(pattern, std::move(handler));
  } else if (method == "OPTIONS") {
    server_->Options(pattern, std::move(handler));
  } else {
    throw Error("HTTP server: cannot route method \"" + std::string(method) +
                "\": use GET, POST, PUT, PATCH, DELETE or OPTIONS");
  }
}

void HttpServer::setErrorHandler(Handler handler) { server_->set_error_handler(std::move(handler)); }

void HttpServer::setLogger(std::function<void(const httplib::Request&, const httplib::Response&)> logger) {
  server_->set_logger(std::move(logger));
}

void HttpServer::handleEverything(Handler handler) {
  everything_ = handler;
  // A content-encoded body is left to httplib, which decodes it; its routes lead here too.
  for (auto route : {&httplib::Server::Get, &httplib::Server::Post, &httplib::Server::Put, &httplib::Server::Patch,
                     &httplib::Server::Delete, &httplib::Server::Options})
    (server_.get()->*route)(".*", handler);
}

void HttpServer::setPreRoutingHandler(std::function<bool(const httplib::Request&, httplib::Response&)> handler) {
  preRouting_ = std::move(handler);
}

int HttpServer::start() {
  if (thread_.joinable()) throw Error(options_.name + " server: start() called twice");
  auto runtime = std::make_unique<Runtime>();
  if (certificates_) {
    runtime->tls = SSL_CTX_new(TLS_server_method());
    if (runtime->tls == nullptr)
      throw Error(options_.name + " server: cannot create a TLS context: " + opensslErrors());
    SSL_CTX_set_options(runtime->tls,
                        SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    certificates_->configure(runtime->tls);
    if (!options_.clientCaPem.empty()) {
      // Ask for a client certificate and verify it against `clientCaPem`, but accept a
      // connection without one (kube-apiserver's x509 authenticator is one of several): the
      // handlers read the verified certificate from the request's SSL.
      auto cas = readPemCertificates(options_.clientCaPem);
      if (cas.empty()) throw Error(options_.name + " server: clientCaPem holds no PEM certificate");
      X509_STORE* store = SSL_CTX_get_cert_store(runtime->tls);
      STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
      for (const auto& ca : cas) {
        X509_STORE_add_cert(store, ca.get());
        sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca.get())));
      }
      SSL_CTX_set_client_CA_list(runtime->tls, names);
      SSL_CTX_set_verify(runtime->tls, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
    }
  }
  runtime->listenFd = listenOn(options_.name, options_.host, options_.port);
  runtime->wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (runtime->wakeFd < 0) throw Error(options_.name + " server: eventfd failed: " + std::strerror(errno));
  port_ = boundPort(runtime->listenFd);
  runtime->address = displayAddress(options_.host, port_);
  runtime->pool = std::make_unique<ElasticTaskQueue>(
      ElasticTaskQueue::Options{options_.name, options_.maxThreads,
                                std::chrono::duration_cast<std::chrono::milliseconds>(options_.threadIdleTimeout)});
  engine(*server_).setListening(runtime->listenFd);
  runtime_ = std::move(runtime);
  thread_ = std::thread([this] {
    nameThisThread(options_.name.substr(0, 8) + "-accept");
    disableThreadCache();  // accepts and hands off; the workers do the allocating
    acceptLoop();
  });
  log::info(logger(), "listening",
            {{"server", options_.name}, {"address", runtime_->address}, {"tls", certificates_ != nullptr}});
  return port_;
}

void HttpServer::acceptLoop() {
  Runtime& rt = *runtime_;
  for (;;) {
    const WaitResult wait = waitFor(rt.listenFd, POLLIN, std::chrono::hours{24}, rt.wakeFd);
    if (wait == WaitResult::Interrupted || rt.stopping) return;
    if (wait != WaitResult::Ready) continue;
    for (;;) {  // drain the backlog: one wake-up may announce many connections
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = ::accept4(rt.listenFd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        log::warn(logger(), "accept failed", {{"server", options_.name}, {"error", std::strerror(errno)}});
        // Out of descriptors or memory: back off instead of spinning on a readable socket.
        waitFor(rt.wakeFd, POLLIN, std::chrono::milliseconds{100});
        break;
      }
      const int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // small responses, sent now
      int peerPort = 0;
      std::string peer = formatAddress(reinterpret_cast<sockaddr*>(&addr), &peerPort);
      rt.accepted.fetch_add(1, std::memory_order_relaxed);
      rt.open.fetch_add(1, std::memory_order_relaxed);
      rt.pool->enqueue([this, fd, peer = std::move(peer), peerPort] {
        try {
          serveConnection(fd, peer, peerPort);
        } catch (const std::exception& e) {  // e.g. bad_alloc inside httplib: lose the connection, not the process
          log::error(logger(), "connection failed",
                     {{"server", options_.name}, {"peer", peer + ":" + std::to_string(peerPort)}, {"error", e.what()}});
        }
        ERR_clear_error();
        ::close(fd);
        runtime_->open.fetch_sub(1, std::memory_order_relaxed);
      });
    }
  }
}

void HttpServer::serveConnection(int fd, const std::string& peer, int peerPort) {
  Runtime& rt = *runtime_;
  const auto readTimeout = std::chrono::duration_cast<std::chrono::milliseconds>(options_.readTimeout);
  const auto writeTimeout = std::chrono::duration_cast<std::chrono::milliseconds>(options_.writeTimeout);
  const auto keepAlive = std::chrono::duration_cast<std::chrono::milliseconds>(options_.keepAliveTimeout);

  OpensslPtr<SSL> ssl;
  if (rt.tls != nullptr) {
    ssl.reset(SSL_new(rt.tls));
    if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) {
      log::error(logger(), "cannot create TLS session", {{"server", options_.name}, {"error", opensslErrors()}});
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + readTimeout;
    for (;;) {
      ERR_clear_error();
      const int r = SSL_accept(ssl.get());
      if (r == 1) break;
      const int err = SSL_get_error(ssl.get(), r);
      const short events = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (events == 0) {
        logFailedHandshake(options_.name, peer + ":" + std::to_string(peerPort));
        return;
      }
      if (left.count() <= 0 || waitFor(fd, events, left, rt.wakeFd) != WaitResult::Ready) return;
    }
  }

  SocketStream stream(fd, ssl.get(), peer, peerPort, readTimeout, writeTimeout);
  tCurrentStream = &stream;
  struct ResetCurrent {
    ~ResetCurrent() { tCurrentStream = nullptr; }
  } resetCurrent;
  Engine& eng = engine(*server_);
  // Request line and headers on top of the body; saturating, for "no limit" options.
  constexpr std::size_t kHeaderAllowance = 1024 * 1024;
  const std::size_t readBudget =
      options_.payloadMaxLength > SIZE_MAX - kHeaderAllowance ? SIZE_MAX : options_.payloadMaxLength + kHeaderAllowance;
  auto idleLimit = readTimeout;  // a new client sends its request right away
  for (std::size_t left = std::max<std::size_t>(options_.keepAliveMaxCount, 1); left > 0; --left) {
    // Idle keep-alive wait: wakes on the next request, the keep-alive timeout, or stop().
    if (!stream.hasBufferedInput() && waitFor(fd, POLLIN, idleLimit, rt.wakeFd) != WaitResult::Ready) break;
    idleLimit = keepAlive;
    const bool closeAfter = left == 1 || rt.stopping.load();
    bool clientClosed = false;
    stream.beginRequest(readBudget);
    stream.holdWrites(true);
    const bool ok = eng.serveRequest(stream, closeAfter, clientClosed, ssl.get());
    if (!stream.flush() || !ok || clientClosed || closeAfter || !stream.reusable()) break;
  }
  if (ssl) {
    ERR_clear_error();
    SSL_shutdown(ssl.get());  // best effort close_notify; the socket is non-blocking
    ERR_clear_error();
  }
  if (stream.leftRequestUnread()) closeLingering(fd, std::chrono::milliseconds{500}, rt.wakeFd);
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  Runtime& rt = *runtime_;
  rt.stopping = true;
  engine(*server_).setListening(-1);
  const std::uint64_t one = 1;
  while (::write(rt.wakeFd, &one, sizeof one) < 0 && errno == EINTR) {
  }
  thread_.join();
  ::close(rt.listenFd);  // new connections are refused from here on
  rt.listenFd = -1;
  rt.pool->shutdown();  // in-flight requests finish; idle connections already woke and closed
  log::info(logger(), "stopped",
            {{"server", options_.name}, {"address", rt.address}, {"connections", rt.accepted.load()}});
}

bool HttpServer::running() const { return thread_.joinable() && runtime_ && !runtime_->stopping; }

std::uint64_t HttpServer::connectionsAccepted() const { return runtime_ ? runtime_->accepted.load() : 0; }

std::size_t HttpServer::openConnections() const { return runtime_ ? runtime_->open.load() : 0; }

}  // namespace mka::net
