#include "mka/net/socket_stream.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace mka::net {

WaitResult waitFor(int fd, short events, std::chrono::milliseconds timeout, int wakeFd) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    pollfd fds[2] = {{fd, events, 0}, {wakeFd, POLLIN, 0}};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero()));
    const int n = ::poll(fds, wakeFd >= 0 ? 2 : 1, static_cast<int>(std::min<std::int64_t>(left.count(), INT_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return WaitResult::Error;
    }
    if (n == 0) return WaitResult::Timeout;
    // The socket first: a request that already arrived is served even while stopping.
    // Hang-ups and errors count as ready: the next read or write reports them.
    if (fds[0].revents != 0) return WaitResult::Ready;
    return WaitResult::Interrupted;
  }
}

void closeLingering(int fd, std::chrono::milliseconds linger, int wakeFd) {
  ::shutdown(fd, SHUT_WR);  // the client sees the end of the response...
  const auto deadline = std::chrono::steady_clock::now() + linger;
  std::array<char, 16 * 1024> sink{};
  std::size_t drained = 0;
  // ...while we swallow what it is still sending, until it closes too or time is up.
  while (drained < 4 * 1024 * 1024) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || waitFor(fd, POLLIN, left, wakeFd) != WaitResult::Ready) break;
    const ssize_t n = ::recv(fd, sink.data(), sink.size(), 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
    if (n > 0) drained += static_cast<std::size_t>(n);
  }
}

std::string formatAddress(const sockaddr* addr, int* port) {
  char host[NI_MAXHOST] = {};
  char service[NI_MAXSERV] = {};
  const socklen_t len = addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::getnameinfo(addr, len, host, sizeof host, service, sizeof service, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  if (port != nullptr) *port = std::atoi(service);
  return host;
}

SocketStream::SocketStream(int fd, SSL* ssl, std::string remoteAddr, int remotePort,
                           std::chrono::milliseconds readTimeout, std::chrono::milliseconds writeTimeout,
                           std::size_t readBuffer)
    : fd_(fd),
      ssl_(ssl),
      remoteAddr_(std::move(remoteAddr)),
      remotePort_(remotePort),
      readTimeout_(readTimeout),
      writeTimeout_(writeTimeout),
      bufferSize_(std::max<std::size_t>(readBuffer, 1)),
      buffer_(std::make_unique_for_overwrite<char[]>(bufferSize_)) {}

bool SocketStream::hasBufferedInput() const {
  return bufferBegin_ < bufferEnd_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0);
}

bool SocketStream::is_readable() const {
  if (hasBufferedInput()) return true;
  // Waiting for input with a request still held would wait for an answer never asked for.
  // (httplib's interface makes this const; the stream itself never is.)
  if (!const_cast<SocketStream*>(this)->flush()) return false;
  return waitFor(fd_, POLLIN, readTimeout_) == WaitResult::Ready;
}

bool SocketStream::is_writable() const { return waitFor(fd_, POLLOUT, writeTimeout_) == WaitResult::Ready; }

void SocketStream::holdWrites(bool hold) {
  if (!hold) flush();
  holdWrites_ = hold;
}

bool SocketStream::flush() {
  std::size_t sent = 0;
  while (sent < held_.size() && !broken_) {
    const ssize_t n = writeSome(held_.data() + sent, held_.size() - sent);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  const bool ok = sent == held_.size();
  if (!ok) broken_ = true;
  held_.clear();
  return ok;
}

void SocketStream::beginRequest(std::size_t readBudget) {
  budget_ = readBudget;
  consumed_ = 0;
}

ssize_t SocketStream::read(char* ptr, size_t size) {
  if (size == 0) return 0;
  if (!held_.empty() && !flush()) return -1;  // the peer answers what it was sent
  if (broken_ || overBudget_) return -1;
  if (consumed_ >= budget_) {
    overBudget_ = true;
    return -1;
  }
  size = std::min(size, budget_ - consumed_);
  if (bufferBegin_ == bufferEnd_) {
    // httplib reads headers a byte at a time: serve those from the buffer.
    if (size >= bufferSize_) {
      const ssize_t n = readSome(ptr, size);
      if (n > 0) consumed_ += static_cast<std::size_t>(n);
      return n;
    }
    const ssize_t n = readSome(buffer_.get(), bufferSize_);
    if (n <= 0) return n;
    bufferBegin_ = 0;
    bufferEnd_ = static_cast<std::size_t>(n);
  }
  const std::size_t n = std::min(size, bufferEnd_ - bufferBegin_);
  std::memcpy(ptr, buffer_.get() + bufferBegin_, n);
  bufferBegin_ += n;
  consumed_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t SocketStream::readSome(char* ptr, size_t size) {
  const int chunk = static_cast<int>(std::min<size_t>(size, INT_MAX));
  for (;;) {
    short waitEvents = POLLIN;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, ptr, chunk);
      if (n > 0) return n;
      const int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_ZERO_RETURN) {
        broken_ = true;
        return 0;
      }
      if (err == SSL_ERROR_WANT_WRITE) {
        waitEvents = POLLOUT;
      } else if (err != SSL_ERROR_WANT_READ) {
        ERR_clear_error();  // the thread's error queue must not leak into the next connection
        broken_ = true;
        return -1;
      }
    } else {
      const ssize_t n = ::recv(fd_, ptr, static_cast<size_t>(chunk), 0);
      if (n > 0) return n;
      if (n == 0) {
        broken_ = true;
        return 0;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        broken_ = true;
        return -1;
      }
    }
    if (waitFor(fd_, waitEvents, readTimeout_) != WaitResult::Ready) {
      broken_ = true;  // a client that stalls mid-request loses the connection
      return -1;
    }
  }
}

ssize_t SocketStream::write(const char* ptr, size_t size) {
  if (size == 0) return 0;
  if (broken_) return -1;
  if (holdWrites_) {
    if (held_.size() + size > kHeldWriteLimit && !flush()) return -1;
    if (size <= kHeldWriteLimit) {
      held_.append(ptr, size);
      return static_cast<ssize_t>(size);
    }
  }
  return writeSome(ptr, size);
}

ssize_t SocketStream::writeSome(const char* ptr, size_t size) {
  const int chunk = static_cast<int>(std::min<size_t>(size, INT_MAX));
  for (;;) {
    short waitEvents = POLLOUT;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      // A retry after WANT_* repeats the same arguments, as OpenSSL requires.
      const int n = SSL_write(ssl_, ptr, chunk);
      if (n > 0) return n;
      const int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_WANT_READ) {
        waitEvents = POLLIN;
      } else if (err != SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        broken_ = true;
        return -1;
      }
    } else {
      const ssize_t n = ::send(fd_, ptr, static_cast<size_t>(chunk), MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        broken_ = true;
        return -1;
      }
    }
    if (waitFor(fd_, waitEvents, writeTimeout_) != WaitResult::Ready) {
      broken_ = true;
      return -1;
    }
  }
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = remoteAddr_;
  port = remotePort_;
}

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  if (localPort_ < 0) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    localAddr_ = formatAddress(reinterpret_cast<sockaddr*>(&addr), &localPort_);
  }
  ip = localAddr_;
  port = localPort_;
}

}  // namespace mka::net
