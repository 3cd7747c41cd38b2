#pragma once
// Loopback ports for tests that must name one before a server binds it.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>

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

}  // namespace mka::test
