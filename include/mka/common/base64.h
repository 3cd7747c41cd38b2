#pragma once
// Base64 (RFC 4648 §4, with '=' padding): AdmissionResponse.patch is a []byte field, which
// encoding/json on the API server side reads as standard base64.

#include <optional>
#include <string>
#include <string_view>

namespace mka {

std::string base64Encode(std::string_view bytes);
// nullopt when `text` is not padded standard base64 (whitespace is not accepted either).
std::optional<std::string> base64Decode(std::string_view text);

}  // namespace mka
