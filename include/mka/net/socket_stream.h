#pragma once
// httplib::Stream over one non-blocking socket, plain or TLS, for either end of a connection.
// On the server it lives as long as the connection (httplib makes one per request and loses
// bytes the client pipelined); the kube client makes one per request on a kept-alive socket.
// It waits with poll() only when the socket has nothing, so every wait has a deadline, and
// reads through a buffer (httplib reads headers a byte at a time).
//
// Written here because httplib's own streams write every piece httplib hands them as its own
// TLS record (status line and headers, then the body: two records, two sends) and read
// headers with one SSL_read per byte, and httplib offers no option for either.
//
// Threads: used by one thread at a time (the server's pool thread for the connection, or the
// client thread making the request).

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mka::net {

enum class WaitResult { Ready, Timeout, Interrupted, Error };

// Waits until `fd` has `events`, `wakeFd` (if >= 0) is readable (Interrupted), or `timeout`.
WaitResult waitFor(int fd, short events, std::chrono::milliseconds timeout, int wakeFd = -1);

class SocketStream final : public httplib::Stream {
 public:
  // `ssl` may be null (plain HTTP); it is borrowed and must outlive the stream.
  // `readBuffer` bytes are read ahead at most; what OpenSSL decrypted beyond stays in its own
  // record buffer until the next read.
  SocketStream(int fd, SSL* ssl, std::string remoteAddr, int remotePort, std::chrono::milliseconds readTimeout,
               std::chrono::milliseconds writeTimeout, std::size_t readBuffer = 16 * 1024);

  // While held, writes collect in memory (up to kHeldWriteLimit, beyond which they go out)
  // and leave together at the next flush(), read or wait for input: a request or an answer
  // becomes one TLS record and one send instead of one per piece. Releasing flushes. A
  // streamed answer must not be held, or its pieces would wait for the next one.
  void holdWrites(bool hold);
  // Sends what is held; false (and the stream is broken) if that fails.
  bool flush();
  static constexpr std::size_t kHeldWriteLimit = 16 * 1024;

  // Bytes already read from the socket (or decrypted) but not yet consumed by httplib: a
  // pipelined next request is ready without waiting for the socket.
  bool hasBufferedInput() const;

  // Starts a request: httplib may read at most `readBudget` bytes for it (request line,
  // headers and body). A cap below httplib's, which never limits what it skips or reads
  // without a Content-Length.
  void beginRequest(std::size_t readBudget);
  // Asks for the connection to be closed after the current response.
  void closeAfterResponse() { closeRequested_ = true; }
  // False once a read or write failed or timed out, the budget ran out, or a close was asked:
  // the connection cannot carry another request.
  bool reusable() const { return !broken_ && !overBudget_ && !closeRequested_; }
  // The response went out before the request was read to its end: closing now would make
  // the kernel answer the unread bytes with a reset, which can destroy the response.
  bool leftRequestUnread() const { return overBudget_ || closeRequested_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  ssize_t readSome(char* ptr, size_t size);
  ssize_t writeSome(const char* ptr, size_t size);

  int fd_;
  SSL* ssl_;
  std::string remoteAddr_;
  int remotePort_;
  mutable std::string localAddr_;  // looked up on first use, then reused for every request
  mutable int localPort_ = -1;
  std::chrono::milliseconds readTimeout_;
  std::chrono::milliseconds writeTimeout_;
  std::size_t bufferSize_;
  std::unique_ptr<char[]> buffer_;
  std::size_t bufferBegin_ = 0;
  std::size_t bufferEnd_ = 0;
  std::size_t budget_ = SIZE_MAX;
  std::size_t consumed_ = 0;
  bool broken_ = false;
  bool overBudget_ = false;
  bool closeRequested_ = false;
  bool holdWrites_ = false;
  std::string held_;
};

// Half-closes `fd` and discards what the peer still sends for up to `linger` (or until it
// closes, or stop() wakes `wakeFd`), so that the peer reads our last response instead of
// a reset. Does not close the descriptor.
void closeLingering(int fd, std::chrono::milliseconds linger, int wakeFd);

// "host:port" / "[v6]:port" of a socket address, and its port.
std::string formatAddress(const sockaddr* addr, int* port = nullptr);

}  // namespace mka::net
