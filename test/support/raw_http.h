#pragma once
// Splitting HTTP/1.1 answers out of bytes read by hand, for the servers' tests that speak HTTP
// over a raw socket (pipelining, idle connections, half-sent requests).

#include <optional>
#include <string>

namespace mka::test {

// Takes the first complete answer (status line, header fields, a Content-Length body) off the
// front of `pending`; nullopt while it is not all there. An interim answer (1xx) has no body.
inline std::optional<std::string> takeHttpResponse(std::string& pending) {
  const auto headerEnd = pending.find("\r\n\r\n");
  if (headerEnd == std::string::npos) return std::nullopt;
  std::size_t length = 0;
  const auto cl = pending.find("Content-Length: ");
  if (cl != std::string::npos && cl < headerEnd) length = std::stoul(pending.substr(cl + 16));
  if (pending.compare(0, 10, "HTTP/1.1 1") == 0) length = 0;
  const std::size_t total = headerEnd + 4 + length;
  if (pending.size() < total) return std::nullopt;
  std::string response = pending.substr(0, total);
  pending.erase(0, total);
  return response;
}

}  // namespace mka::test
