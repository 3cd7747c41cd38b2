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
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace mka::net {

class CertificateReloader;

struct ServerOptions {
  std::string name = "http";  // for logs
  std::string host = "0.0.0.0";
  int port = 0;  // 0 = pick a free port (tests); port() tells which
  std::size_t maxThreads = 512;  // upper bound on connections served at once
  std::size_t keepAliveMaxCount = 1'000'000;  // requests per connection
  std::chrono::seconds keepAliveTimeout{120};  // idle time before a connection is closed
  std::chrono::seconds readTimeout{10};
  std::chrono::seconds writeTimeout{10};
  std::size_t payloadMaxLength = 8 * 1024 * 1024;  // larger bodies get 413
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
  // is served to new connections without a restart.
  HttpServer(ServerOptions options, std::shared_ptr<CertificateReloader> certificates);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Register handlers before start().
  httplib::Server& routes();

  // Binds and starts serving on a background thread; returns the bound port. Throws
  // mka::Error naming the address when the bind fails.
  int start();
  // Stops accepting, lets in-flight requests finish, closes idle keep-alive connections, joins.
  void stop();
  int port() const { return port_; }
  bool running() const;

 private:
  ServerOptions options_;
  std::shared_ptr<CertificateReloader> certificates_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = -1;
};

}  // namespace mka::net
