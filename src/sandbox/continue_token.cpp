#include "continue_token.h"

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "mka/sandbox/api_error.h"

namespace mka::sandbox {
namespace {

// RFC 4648 §5 alphabet without padding, as Go's base64.RawURLEncoding (kube-apiserver's choice).
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64UrlEncode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = buffer << 8 | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[buffer >> bits & 63];
    }
  }
  if (bits > 0) out += kAlphabet[buffer << (6 - bits) & 63];
  return out;
}

std::optional<std::string> base64UrlDecode(std::string_view text) {
  std::array<int, 256> table{};
  table.fill(-1);
  for (std::size_t i = 0; i < kAlphabet.size(); ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int>(i);
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : text) {
    if (table[c] < 0) return std::nullopt;
    buffer = buffer << 6 | static_cast<std::uint32_t>(table[c]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(buffer >> bits & 0xff);
    }
  }
  return out;
}

constexpr std::string_view kVersion = "meta.k8s.io/v1";

}  // namespace

std::string encodeContinue(const ContinueToken& token) {
  const nlohmann::json body = {
      {"v", kVersion}, {"rv", token.resourceVersion}, {"start", token.namespace_ + "/" + token.name}};
  return base64UrlEncode(body.dump());
}

ContinueToken decodeContinue(const std::string& text) {
  auto fail = [](const std::string& why) { return ApiError::badRequest("invalid continue token: " + why); };
  const auto bytes = base64UrlDecode(text);
  if (!bytes) throw fail("continue key is not valid: illegal base64 data");
  const auto body = nlohmann::json::parse(*bytes, nullptr, false);
  if (!body.is_object()) throw fail("continue key is not valid: not a JSON object");
  if (body.value("v", "") != kVersion) {
    throw fail("continue key is not valid: server does not recognize this encoded key");
  }
  const auto rv = body.find("rv");
  const auto start = body.find("start");
  if (rv == body.end() || !rv->is_number_integer() || start == body.end() || !start->is_string()) {
    throw fail("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  }
  ContinueToken token;
  token.resourceVersion = rv->get<std::int64_t>();
  const auto& key = start->get_ref<const std::string&>();
  const auto slash = key.find('/');
  if (slash == std::string::npos || slash + 1 == key.size()) throw fail("continue key is not valid: no start key");
  token.namespace_ = key.substr(0, slash);
  token.name = key.substr(slash + 1);
  return token;
}

}  // namespace mka::sandbox
