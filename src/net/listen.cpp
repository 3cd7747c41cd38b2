#include "listen.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "mka/common/errors.h"
#include "mka/net/socket_stream.h"

namespace mka::net {

std::string displayAddress(const std::string& host, int port) {
  if (host.empty()) return ":" + std::to_string(port);
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

int listenOn(const std::string& name, const std::string& host, int port) {
  const std::string shown = displayAddress(host, port);
  if (port < 0 || port > 65535) {
    throw Error(name + " server: cannot listen on " + shown + ": port must be 0-65535 (0 picks a free one)");
  }
  std::vector<std::string> candidates =
      host.empty() ? std::vector<std::string>{"::", "0.0.0.0"} : std::vector<std::string>{host};
  int lastErrno = 0;
  std::string resolveError;
  for (const auto& candidate : candidates) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* addrs = nullptr;
    const int gai = ::getaddrinfo(candidate.c_str(), std::to_string(port).c_str(), &hints, &addrs);
    if (gai != 0) {
      resolveError = ::gai_strerror(gai);
      continue;
    }
    for (addrinfo* ai = addrs; ai != nullptr; ai = ai->ai_next) {
      const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
      if (fd < 0) {
        lastErrno = errno;
        continue;
      }
      const int yes = 1;
      const int no = 0;
      // SO_REUSEADDR only: a restart may reuse a port in TIME_WAIT, but a port another
      // process listens on must fail loudly (SO_REUSEPORT would silently share it).
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (ai->ai_family == AF_INET6 && host.empty()) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
      if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
        ::freeaddrinfo(addrs);
        return fd;
      }
      lastErrno = errno;
      ::close(fd);
    }
    ::freeaddrinfo(addrs);
    if (lastErrno == EADDRINUSE) break;  // the dual-stack attempt already tells the truth
  }
  std::string reason = lastErrno != 0 ? std::strerror(lastErrno) : "cannot resolve host: " + resolveError;
  std::string fix = lastErrno == EADDRINUSE ? "another process (or another server in this one) uses the port; "
                                              "stop it or choose another port"
                    : lastErrno == EACCES   ? "ports below 1024 need privileges; choose a port of 1024 or more"
                                            : "check the host is an address of this machine";
  throw Error(name + " server: cannot listen on " + shown + ": " + reason + ": " + fix);
}

int boundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  int port = -1;
  formatAddress(reinterpret_cast<sockaddr*>(&addr), &port);
  return port;
}

}  // namespace mka::net
