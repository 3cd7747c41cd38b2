#include <algorithm>
#include <cctype>

#include "mka/common/errors.h"
#include "mka/net/http_server.h"

namespace mka::net {

BindAddress parseBindAddress(const std::string& address) {
  if (address == "0") return {"", -1};
  const auto fail = [&address]() -> BindAddress {
    throw Error("invalid bind address \"" + address +
                "\": write it as [host]:port, e.g. \":8080\" (all interfaces), \"127.0.0.1:8080\" or "
                "\"[::1]:8080\", or \"0\" to disable");
  };
  std::string host;
  std::string port;
  if (!address.empty() && address.front() == '[') {
    const auto close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') return fail();
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
    if (host.empty()) return fail();
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) return fail();
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string::npos) return fail();  // IPv6 needs brackets
  }
  const bool hostOk = std::all_of(host.begin(), host.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '.' || c == '-' || c == ':' || c == '%' || c == '_';
  });
  const bool portOk = !port.empty() && port.size() <= 5 &&
                      std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!hostOk || !portOk || std::stoi(port) > 65535) return fail();
  return {host, std::stoi(port)};
}

}  // namespace mka::net
