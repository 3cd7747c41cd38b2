#include "mka/net/openssl.h"

#include <openssl/err.h>

namespace mka::net {

std::string opensslErrors() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    if (!out.empty()) out += "; ";
    out += buffer;
  }
  return out;
}

}  // namespace mka::net
