#pragma once
// An HTTP/1.1 server (plain or TLS) on cpp-httplib, set up for kube-apiserver and kubelet
// clients: long keep-alive with many requests per connection, a thread pool that grows with
// the number of open connections (httplib holds a thread per connection for its whole life,
// so a fixed pool would starve new connections behind idle keep-alive ones), bounded bodies,
// read/write timeouts, and a stop() that finishes in-flight requests.
//
// Threads: the owner calls start()/stop(); requests run on the server's pool threads.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace mka::net {

class CertificateReloader;

struct ServerOptions {
  std::string name = "http";  // for logs
  std::string host = "0.0.0.0";
  int port = 0;                                // 0 = pick a free port (tests); port() tells which
  std::size_t maxThreads = 512;                // upper bound on connections served at once
  std::size_t keepAliveMaxCount = 1'000'000;   // requests per connection
  std::chrono::seconds keepAliveTimeout{120};  // idle time before a connection is closed
  std::chrono::seconds readTimeout{10};
  std::chrono::seconds writeTimeout{10};
  std::size_t payloadMaxLength = 8 * 1024 * 1024;  // larger bodies get 413
  std::chrono::seconds threadIdleTimeout{60};
  // TLS only: CA certificates (PEM) that client certificates are verified against. When set,
  // clients are asked for a certificate (one is not required); a handler finds the verdict
  // with SSL_get_verify_result on httplib::Request::ssl.
  std::string clientCaPem;  // an idle pool thread exits after this
};

// Splits a controller-runtime style bind address (":8081", "127.0.0.1:8080", "[::1]:9443")
// into host and port; an empty host means all interfaces. Throws mka::Error naming the
// address and the expected form. "0" means "disabled" and yields port -1.
struct BindAddress {
  std::string host;
  int port;
};
BindAddress parseBindAddress(const std::string& address);

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);  // plain HTTP
  // TLS 1.2+, certificate chosen per handshake from `certificates`, so a rotated certificate
  // is served to new connections without a restart. The caller starts `certificates`
  // (CertificateReloader::start); until a pair is loaded, handshakes fail.
  HttpServer(ServerOptions options, std::shared_ptr<CertificateReloader> certificates);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  // Register handlers before start(). `method` ("GET", "POST", "PUT", "PATCH", "DELETE" or
  // "OPTIONS") requests whose path matches `pattern` (a std::regex, matched whole) go to
  // `handler`; the first route registered that matches wins. Throws mka::Error for another
  // method.
  void route(std::string_view method, const std::string& pattern, Handler handler);
  // Fills the answer to a request the server refused itself (400 unparsable, 413 over the body
  // limit) or that no route matched (404), before it is sent.
  void setErrorHandler(Handler handler);
  // Called after each answer is sent (access logs).
  void setLogger(std::function<void(const httplib::Request&, const httplib::Response&)> logger);
  // Runs before routing, after the server's own checks; return true when it wrote the
  // response itself (the route handler is then skipped).
  void setPreRoutingHandler(std::function<bool(const httplib::Request&, httplib::Response&)> handler);
  // Every request, whatever its method and path, goes to `handler`, without httplib's routing:
  // httplib matches the path against each route's std::regex, which costs microseconds a
  // request. The body is read here as httplib reads it (Content-Length; over the payload limit:
  // 413). A request whose body is content-encoded still goes through httplib, to the same
  // handler. Use instead of route().
  void handleEverything(Handler handler);

  // Binds and starts serving on a background thread; returns the bound port. Throws
  // mka::Error naming the address when the bind fails.
  int start();
  // Stops accepting, lets in-flight requests finish, closes idle keep-alive connections, joins.
  void stop();
  int port() const { return port_; }
  bool running() const;

  // Connections accepted since start(), and open now (idle keep-alive ones included).
  std::uint64_t connectionsAccepted() const;
  std::size_t openConnections() const;

 private:
  struct Runtime;  // sockets, TLS context, pool: what exists between start() and stop()
  void acceptLoop();
  void serveConnection(int fd, const std::string& peer, int peerPort);

  ServerOptions options_;
  std::shared_ptr<CertificateReloader> certificates_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;  // the accept loop
  int port_ = -1;
  std::unique_ptr<Runtime> runtime_;
  std::function<bool(const httplib::Request&, httplib::Response&)> preRouting_;
  std::function<void(const httplib::Request&, httplib::Response&)> everything_;
};

}  // namespace mka::net
