#include "support/tls_record_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mka::test {
namespace {

// Follows one direction's byte stream record by record: a 5-byte header (type, version,
// 16-bit length), then the length's bytes.
struct RecordCounter {
  std::array<std::uint8_t, 5> header{};
  std::size_t headerSeen = 0;
  std::size_t bodyLeft = 0;

  std::size_t feed(const char* data, std::size_t size) {
    std::size_t completed = 0;
    for (std::size_t i = 0; i < size;) {
      if (headerSeen < header.size()) {
        header[headerSeen++] = static_cast<std::uint8_t>(data[i++]);
        if (headerSeen == header.size()) {
          bodyLeft = (std::size_t{header[3]} << 8) | header[4];
          if (bodyLeft == 0) {
            ++completed;
            headerSeen = 0;
          }
        }
        continue;
      }
      const std::size_t take = std::min(bodyLeft, size - i);
      i += take;
      bodyLeft -= take;
      if (bodyLeft == 0) {
        ++completed;
        headerSeen = 0;
      }
    }
    return completed;
  }
};

struct Pair {
  int client;
  int server;
  RecordCounter toServer;
  RecordCounter toClient;
};

bool sendAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

int connectTo(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TlsRecordProxy::TlsRecordProxy(int targetPort) : targetPort_(targetPort) {
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listenFd_ < 0 || ::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listenFd_, 16) != 0 || ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("TlsRecordProxy: cannot listen on 127.0.0.1: errno " + std::to_string(errno));
  port_ = ntohs(addr.sin_port);
  wakeFd_ = ::eventfd(0, EFD_CLOEXEC);
  thread_ = std::thread([this] { run(); });
}

TlsRecordProxy::~TlsRecordProxy() {
  const std::uint64_t one = 1;
  while (::write(wakeFd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
  thread_.join();
  ::close(listenFd_);
  ::close(wakeFd_);
}

void TlsRecordProxy::run() {
  std::vector<Pair> pairs;
  std::array<char, 16 * 1024> buffer{};
  for (;;) {
    std::vector<pollfd> fds = {{wakeFd_, POLLIN, 0}, {listenFd_, POLLIN, 0}};
    for (const Pair& p : pairs) {
      fds.push_back({p.client, POLLIN, 0});
      fds.push_back({p.server, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;
    std::vector<bool> closed(pairs.size(), false);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      for (int side = 0; side < 2 && !closed[i]; ++side) {
        if (fds[2 + 2 * i + side].revents == 0) continue;
        Pair& p = pairs[i];
        const int from = side == 0 ? p.client : p.server;
        const int to = side == 0 ? p.server : p.client;
        const ssize_t n = ::recv(from, buffer.data(), buffer.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          closed[i] = true;
          continue;
        }
        const std::size_t records =
            (side == 0 ? p.toServer : p.toClient).feed(buffer.data(), static_cast<std::size_t>(n));
        (side == 0 ? toServer_ : toClient_) += records;
        if (!sendAll(to, buffer.data(), static_cast<std::size_t>(n))) closed[i] = true;
      }
    }
    for (std::size_t i = pairs.size(); i-- > 0;) {
      if (!closed[i]) continue;
      ::close(pairs[i].client);
      ::close(pairs[i].server);
      pairs.erase(pairs.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (fds[1].revents != 0) {
      const int client = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int server = connectTo(targetPort_);
      if (server < 0) {
        ::close(client);
        continue;
      }
      pairs.push_back({client, server, {}, {}});
    }
  }
  for (const Pair& p : pairs) {
    ::close(p.client);
    ::close(p.server);
  }
}

}  // namespace mka::test
