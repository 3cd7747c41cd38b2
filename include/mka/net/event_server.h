#pragma once
// An event-driven HTTP/1.1 server over TLS, for the admission webhook's port: kube-apiserver
// opens one keep-alive connection per concurrent call, so a busy cluster holds dozens of them,
// and a thread per connection (HttpServer) spends more CPU switching between them than the
// webhook spends answering. Here a few threads each run an event loop (Boost.Asio) that owns
// the connections handed to it from accept to close; requests are parsed by Boost.Beast's
// parser straight into buffers each connection reuses, and an answer leaves as one write.
//
// Limits as HttpServer's: request body and header sizes, read/write/keep-alive timeouts,
// Content-Length framing only (no chunked or content-encoded bodies). stop() drains: it stops
// accepting, lets every request already begun be answered (with "Connection: close"), closes
// idle connections, then joins. The certificate is chosen per handshake from a
// CertificateReloader, so a rotated one reaches new connections while open ones go on.
//
// Threads: the owner calls start()/stop(); the handler runs on the loop threads, several at a
// time, and must answer from memory without blocking (it holds up every connection of its
// loop while it runs).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mka::net {

class CertificateReloader;

struct EventServerOptions {
  std::string name = "webhook";  // for logs and thread names
  std::string host = "0.0.0.0";
  int port = 0;                                // 0 = pick a free port (tests); port() tells which
  std::size_t threads = 2;                     // event loops; eventLoopsFor() says how many
  std::size_t maxBodyBytes = 8 * 1024 * 1024;  // larger bodies get 413
  std::size_t maxHeaderBytes = 64 * 1024;      // request line and headers; larger get 431
  // The TLS handshake, and a request from its first byte to its last.
  std::chrono::milliseconds readTimeout{std::chrono::seconds{10}};
  std::chrono::milliseconds writeTimeout{std::chrono::seconds{10}};
  // Idle time between requests before a connection is closed.
  std::chrono::milliseconds keepAliveTimeout{std::chrono::seconds{120}};
};

// The event loops a server should run on a machine with `cpus` CPUs: two per CPU, at most
// eight. With one loop per CPU, a loop under full load always has another request ready, so
// the scheduler preempts it (when the clients' threads wake on the same CPUs) while its other
// connections wait for a whole time slice; with two, a loop empties its queue and waits before
// its slice ends, which keeps the tail latency short (the measurements: bench/README.md).
std::size_t eventLoopsFor(unsigned cpus);

struct ServerRequest {
  std::string_view method;
  std::string_view path;  // the target without its query string
  std::string_view contentType;
  std::string_view body;
};

// Reused from one request of a connection to the next (the strings keep their capacity):
// the server resets it to status 200 with nothing set before calling the handler.
struct ServerResponse {
  int status = 200;
  std::string contentType;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // more header fields, e.g. Allow
};

class EventServer {
 public:
  using Handler = std::function<void(const ServerRequest&, ServerResponse&)>;
  // Fills the answer to a request the server refuses itself (400 malformed, 411 framing,
  // 413 body too large, 415 content-encoded, 431 headers too large, 500 a handler that threw);
  // `message` says what was wrong and what to do. The default answers `message` as text/plain.
  using ErrorRenderer = std::function<void(int status, std::string_view message, ServerResponse&)>;

  // TLS 1.2+; the caller starts `certificates` (CertificateReloader::start); until a pair is
  // loaded, handshakes fail.
  EventServer(EventServerOptions options, std::shared_ptr<CertificateReloader> certificates, Handler handler);
  ~EventServer();
  EventServer(const EventServer&) = delete;
  EventServer& operator=(const EventServer&) = delete;

  // Before start().
  void setErrorRenderer(ErrorRenderer renderer);

  // Binds, starts the loops and returns the bound port. Throws mka::Error naming the address
  // when the bind fails.
  int start();
  // Stops accepting, answers the requests already begun, closes the connections, joins.
  void stop();
  int port() const { return port_; }

  // Connections accepted since start(), and open now (idle keep-alive ones included).
  std::uint64_t connectionsAccepted() const;
  std::size_t openConnections() const;

  struct Runtime;  // the loops, the acceptor, the TLS context: what exists between start() and stop()

 private:
  EventServerOptions options_;
  std::shared_ptr<CertificateReloader> certificates_;
  Handler handler_;
  ErrorRenderer errorRenderer_;
  int port_ = -1;
  std::unique_ptr<Runtime> runtime_;
};

}  // namespace mka::net
