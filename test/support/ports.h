#pragma once
// Loopback ports for tests that must name one before a server binds it.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mka::test {

// Binds `port` on 127.0.0.1 (0: any) and returns the port bound, or -1; closes it again.
inline int bindLoopbackOnce(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t length = sizeof address;
  int bound = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    bound = ntohs(address.sin_port);
  ::close(fd);
  return bound;
}

// A loopback port free right now.
inline int freeLoopbackPort() {
  const int port = bindLoopbackOnce(0);
  if (port <= 0) throw std::runtime_error("no free loopback port");
  return port;
}

// Whether nothing listens on `port` of 127.0.0.1 (it can be bound).
inline bool canBindLoopback(int port) { return bindLoopbackOnce(port) == port; }

// A TCP connection to 127.0.0.1:`port`, for tests that speak to a server by hand. Reads wait at
// most 10 s, so a server that never answers fails the test instead of hanging it.
inline int connectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
  }
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

}  // namespace mka::test
