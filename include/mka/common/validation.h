#pragma once
// Kubernetes name and label syntax checks (apimachinery's validation package). Each returns the
// list of problems, empty when the value is valid, worded like the Kubernetes API server words them.

#include <string>
#include <string_view>
#include <vector>

namespace mka::validation {

// RFC 1123 subdomain: at most 253 chars, lower-case alphanumerics, '-' and '.', starting and
// ending alphanumeric (object names, queue names).
std::vector<std::string> dns1123Subdomain(std::string_view value);
// RFC 1123 label: at most 63 chars, lower-case alphanumerics and '-', alphanumeric at both ends.
std::vector<std::string> dns1123Label(std::string_view value);
// Label value: empty, or at most 63 chars of alphanumerics, '-', '_', '.', alphanumeric at both ends.
std::vector<std::string> labelValue(std::string_view value);
// Qualified name (label and annotation keys): optional DNS subdomain prefix and '/', then a
// name of at most 63 chars of alphanumerics, '-', '_', '.', alphanumeric at both ends.
std::vector<std::string> qualifiedName(std::string_view value);
// ConfigMap and Secret data keys: at most 253 chars of alphanumerics, '-', '_' and '.', not "."
// or "..", not starting with "..".
std::vector<std::string> configMapKey(std::string_view value);
// Domain-prefixed path ("acme.io/foo"): a DNS subdomain, '/', then URL path characters. Kueue
// requires this form for AdmissionCheck controller names.
std::vector<std::string> domainPrefixedPath(std::string_view value);
// An IPv4 or IPv6 address literal (no brackets), as inet_pton reads it: a host to check as an IP
// address rather than as a DNS name.
bool isIpLiteral(const std::string& host);

}  // namespace mka::validation
