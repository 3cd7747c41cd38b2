#include "mka/common/validation.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "support/table_test.h"

namespace mka::validation {
namespace {

using Validator = std::function<std::vector<std::string>(std::string_view)>;

struct Case {
  std::string name;
  Validator validate;
  std::string value;
  std::vector<std::string> expected;  // exact messages, empty when valid
};

const std::string kLabelRegexMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const std::string kSubdomainRegexMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const std::string kLabelValueRegexMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const std::string kNamePartRegexMsg =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

std::vector<Case> matchesApimachineryRulesAndWordingCases() {
  const std::vector<Case> cases = {
      {"label ok", dns1123Label, "kueue-system", {}},
      {"label digits first ok", dns1123Label, "123-abc", {}},
      {"label 63 chars ok", dns1123Label, std::string(63, 'a'), {}},
      {"label 64 chars", dns1123Label, std::string(64, 'a'), {"must be no more than 63 characters"}},
      {"label upper case", dns1123Label, "Kueue", {kLabelRegexMsg}},
      {"label empty", dns1123Label, "", {kLabelRegexMsg}},
      {"label trailing dash", dns1123Label, "abc-", {kLabelRegexMsg}},
      {"label with dots", dns1123Label, "a.b", {"must not contain dots"}},
      {"subdomain ok", dns1123Subdomain, "tekton.dev", {}},
      {"subdomain single label ok", dns1123Subdomain, "build-42", {}},
      {"subdomain empty label", dns1123Subdomain, "a..b", {kSubdomainRegexMsg}},
      {"subdomain leading dot", dns1123Subdomain, ".a", {kSubdomainRegexMsg}},
      {"subdomain underscore", dns1123Subdomain, "my_queue", {kSubdomainRegexMsg}},
      {"subdomain 253 ok", dns1123Subdomain, std::string(253, 'a'), {}},
      {"subdomain 254", dns1123Subdomain, std::string(254, 'a'), {"must be no more than 253 characters"}},
      {"label value ok", labelValue, "multikueue", {}},
      {"label value mixed ok", labelValue, "My_value.1", {}},
      {"label value empty ok", labelValue, "", {}},
      {"label value slash", labelValue, "kueue.x-k8s.io/multikueue", {kLabelValueRegexMsg}},
      {"label value trailing dash", labelValue, "a-", {kLabelValueRegexMsg}},
      {"label value too long", labelValue, std::string(64, 'a'), {"must be no more than 63 characters"}},
      {"qualified name plain ok", qualifiedName, "app", {}},
      {"qualified name prefixed ok", qualifiedName, "workflows.argoproj.io/controller-instanceid", {}},
      {"qualified name empty prefix", qualifiedName, "/name", {"prefix part must be non-empty"}},
      {"qualified name bad prefix", qualifiedName, "Example.com/name", {"prefix part " + kSubdomainRegexMsg}},
      {"qualified name empty name", qualifiedName, "example.com/", {"name part must be non-empty", kNamePartRegexMsg}},
      {"qualified name too long",
       qualifiedName,
       std::string(64, 'a'),
       {"name part must be no more than 63 characters"}},
      {"qualified name two slashes",
       qualifiedName,
       "a/b/c",
       {"a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
        "'example.com/MyName')"}},
      {"domain path ok", domainPrefixedPath, "multikueue-adapter.dev/dispatcher", {}},
      {"domain path kueue ok", domainPrefixedPath, "kueue.x-k8s.io/multikueue", {}},
      {"domain path empty", domainPrefixedPath, "", {"must be non-empty"}},
      {"domain path no slash",
       domainPrefixedPath,
       "dispatcher",
       {"must be a domain-prefixed path (such as \"acme.io/foo\")"}},
      {"domain path empty path",
       domainPrefixedPath,
       "example.com/",
       {"must be a domain-prefixed path (such as \"acme.io/foo\")"}},
      {"domain path bad host", domainPrefixedPath, "Example.com/x", {kSubdomainRegexMsg}},
      {"domain path bad path",
       domainPrefixedPath,
       "example.com/a b",
       {"Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"}},
  };
  return cases;
}

MKA_TABLE_TEST(Validation, MatchesApimachineryRulesAndWording, Case, matchesApimachineryRulesAndWordingCases()) {
  const Case& c = testCase();
  EXPECT_EQ(c.validate(c.value), c.expected);
}

}  // namespace
}  // namespace mka::validation

namespace mka::validation {
namespace {

TEST(Validation, IpLiteralsAreAddressesAndNamesAreNot) {
  for (const char* ip : {"127.0.0.1", "10.0.0.255", "::1", "fd00::8a2e:370:7334"}) EXPECT_TRUE(isIpLiteral(ip)) << ip;
  for (const char* host : {"localhost", "api.example.com", "1.2.3", "256.0.0.1", "[::1]", ""})
    EXPECT_FALSE(isIpLiteral(host)) << host;
}

}  // namespace
}  // namespace mka::validation
