#include "mka/common/validation.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include <string>

namespace mka::validation {
namespace {

// Messages and regex texts are apimachinery's (k8s.io/apimachinery/pkg/util/validation), so a
// user who has seen the API server's answer recognises ours.
constexpr std::size_t kLabelMaxLength = 63;
constexpr std::size_t kSubdomainMaxLength = 253;

constexpr std::string_view kLabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character";
constexpr std::string_view kSubdomainFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kSubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character";
constexpr std::string_view kQualifiedFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kQualifiedMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character";
constexpr std::string_view kHttpPathFmt = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

bool isLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool isAlnum(char c) { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

std::string maxLenError(std::size_t n) { return "must be no more than " + std::to_string(n) + " characters"; }

// apimachinery's RegexError: "<msg> (e.g. 'a',  or 'b', regex used for validation is '<fmt>')",
// the two spaces included.
std::string regexError(std::string_view msg, std::string_view fmt, std::initializer_list<std::string_view> examples) {
  std::string out(msg);
  if (examples.size() == 0) return out + " (regex used for validation is '" + std::string(fmt) + "')";
  out += " (e.g. ";
  bool first = true;
  for (auto e : examples) {
    if (!first) out += " or ";
    out += "'" + std::string(e) + "', ";
    first = false;
  }
  return out + "regex used for validation is '" + std::string(fmt) + "')";
}

bool matchesLabel(std::string_view v) {
  if (v.empty() || !isLowerAlnum(v.front()) || !isLowerAlnum(v.back())) return false;
  for (char c : v)
    if (!isLowerAlnum(c) && c != '-') return false;
  return true;
}

bool matchesSubdomain(std::string_view v) {
  if (v.empty()) return false;
  std::size_t start = 0;
  while (true) {
    auto dot = v.find('.', start);
    auto label = dot == std::string_view::npos ? v.substr(start) : v.substr(start, dot - start);
    if (!matchesLabel(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool matchesQualifiedPart(std::string_view v) {
  if (v.empty() || !isAlnum(v.front()) || !isAlnum(v.back())) return false;
  for (char c : v)
    if (!isAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool matchesHttpPath(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v)
    if (!isAlnum(c) && std::string_view("/-._~%!$&'()*+,;=:").find(c) == std::string_view::npos) return false;
  return true;
}

}  // namespace

std::vector<std::string> dns1123Subdomain(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kSubdomainMaxLength) errs.push_back(maxLenError(kSubdomainMaxLength));
  if (!matchesSubdomain(value)) errs.push_back(regexError(kSubdomainMsg, kSubdomainFmt, {"example.com"}));
  return errs;
}

std::vector<std::string> dns1123Label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelMaxLength) errs.push_back(maxLenError(kLabelMaxLength));
  if (!matchesLabel(value)) {
    // A valid subdomain that is not a valid label can only be wrong because of its dots.
    if (matchesSubdomain(value))
      errs.push_back("must not contain dots");
    else
      errs.push_back(regexError(kLabelMsg, kLabelFmt, {"my-name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> configMapKey(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kSubdomainMaxLength) errs.push_back(maxLenError(kSubdomainMaxLength));
  const bool valid = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
  if (!valid)
    errs.push_back(regexError("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                              "[-._a-zA-Z0-9]+", {"key.name", "KEY_NAME", "key-name"}));
  if (value == ".") {
    errs.push_back("must not be '.'");
  } else if (value == "..") {
    errs.push_back("must not be '..'");
  } else if (value.starts_with("..")) {
    errs.push_back("must not start with '..'");
  }
  return errs;
}

std::vector<std::string> labelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelMaxLength) errs.push_back(maxLenError(kLabelMaxLength));
  if (!value.empty() && !matchesQualifiedPart(value))
    errs.push_back(
        regexError(kLabelValueMsg, "(" + std::string(kQualifiedFmt) + ")?", {"MyValue", "my_value", "12345"}));
  return errs;
}

std::vector<std::string> qualifiedName(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name = value;
  auto slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back("a qualified name " + regexError(kQualifiedMsg, kQualifiedFmt, {"MyName", "my.name", "123-abc"}) +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    auto prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (auto& e : dns1123Subdomain(prefix)) errs.push_back("prefix part " + e);
    }
  }
  if (name.empty())
    errs.push_back("name part must be non-empty");
  else if (name.size() > kLabelMaxLength)
    errs.push_back("name part " + maxLenError(kLabelMaxLength));
  if (!matchesQualifiedPart(name))
    errs.push_back("name part " + regexError(kQualifiedMsg, kQualifiedFmt, {"MyName", "my.name", "123-abc"}));
  return errs;
}

std::vector<std::string> domainPrefixedPath(std::string_view value) {
  std::vector<std::string> errs;
  if (value.empty()) return {"must be non-empty"};
  auto slash = value.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == value.size())
    return {"must be a domain-prefixed path (such as \"acme.io/foo\")"};
  errs = dns1123Subdomain(value.substr(0, slash));
  if (!matchesHttpPath(value.substr(slash + 1))) errs.push_back(regexError("Invalid path", kHttpPathFmt, {}));
  return errs;
}

bool isIpLiteral(const std::string& host) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 || inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

}  // namespace mka::validation
