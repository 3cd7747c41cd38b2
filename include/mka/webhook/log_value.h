#pragma once
// Values for "key=value" log lines. Admission input is untrusted: a value with spaces, quotes
// or control characters is quoted and escaped so that it cannot forge extra fields or lines.

#include <string>
#include <string_view>

namespace mka::webhook {

// `value` unchanged when it is a plain token, else "..." with \" \\ \n \t and \xNN escapes;
// values longer than 256 bytes are cut (with "...") so one request cannot flood the log.
std::string logValue(std::string_view value);

}  // namespace mka::webhook
