#pragma once
// A TCP proxy on 127.0.0.1 in front of a TLS server that counts the TLS records going each way
// (from their 5-byte record headers; it does not decrypt), so that a test can see how a client
// frames its requests and a server its answers: on a kept-alive TLS 1.3 connection every
// record after the handshake is an application_data record.
//
// Threads: its own thread accepts and forwards every connection; the counters may be read
// from any thread. A byte is counted before it is forwarded, so a request's records are
// counted once the server has it and an answer's once the client has it.

#include <atomic>
#include <cstddef>
#include <thread>

namespace mka::test {

class TlsRecordProxy {
 public:
  // Forwards connections to 127.0.0.1:`targetPort`.
  explicit TlsRecordProxy(int targetPort);
  ~TlsRecordProxy();
  TlsRecordProxy(const TlsRecordProxy&) = delete;
  TlsRecordProxy& operator=(const TlsRecordProxy&) = delete;

  int port() const { return port_; }
  // Whole records seen so far from clients to the server, and from the server to clients.
  std::size_t recordsToServer() const { return toServer_.load(); }
  std::size_t recordsToClient() const { return toClient_.load(); }

 private:
  void run();

  int targetPort_;
  int listenFd_ = -1;
  int wakeFd_ = -1;
  int port_ = 0;
  std::atomic<std::size_t> toServer_{0};
  std::atomic<std::size_t> toClient_{0};
  std::thread thread_;
};

}  // namespace mka::test
