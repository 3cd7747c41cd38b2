#include <gtest/gtest.h>

#include "mka/common/errors.h"
#include "mka/net/http_server.h"

namespace mka::net {
namespace {

struct Case {
  std::string name;
  std::string address;
  std::string host;
  int port;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
};

class ParseBindAddressTest : public ::testing::TestWithParam<Case> {};

TEST_P(ParseBindAddressTest, Splits) {
  const auto& c = GetParam();
  const BindAddress got = parseBindAddress(c.address);
  EXPECT_EQ(got.host, c.host);
  EXPECT_EQ(got.port, c.port);
}

INSTANTIATE_TEST_SUITE_P(
    Valid, ParseBindAddressTest,
    ::testing::Values(Case{"AllInterfaces", ":8081", "", 8081}, Case{"Ipv4", "127.0.0.1:8080", "127.0.0.1", 8080},
                      Case{"Ipv6", "[::1]:9443", "::1", 9443}, Case{"Ipv6Any", "[::]:9443", "::", 9443},
                      Case{"Hostname", "localhost:80", "localhost", 80}, Case{"AnyPort", ":0", "", 0},
                      Case{"HighestPort", ":65535", "", 65535}, Case{"Disabled", "0", "", -1}),
    [](const auto& info) { return info.param.name; });

struct BadCase {
  std::string name;
  std::string address;
  friend void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }
};

class ParseBindAddressErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParseBindAddressErrorTest, RejectsWithTheAddressAndTheExpectedForm) {
  const auto& c = GetParam();
  try {
    parseBindAddress(c.address);
    FAIL() << "accepted \"" << c.address << "\"";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("\"" + c.address + "\""), std::string::npos) << message;
    EXPECT_NE(message.find("[host]:port"), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Invalid, ParseBindAddressErrorTest,
                         ::testing::Values(BadCase{"Empty", ""}, BadCase{"PortOnly", "8080"},
                                           BadCase{"NoPort", "127.0.0.1:"}, BadCase{"PortTooBig", ":65536"},
                                           BadCase{"PortNotNumber", ":http"}, BadCase{"NegativePort", ":-1"},
                                           BadCase{"UnbracketedIpv6", "::1:8080"},
                                           BadCase{"BracketsWithoutPort", "[::1]"}, BadCase{"EmptyBrackets", "[]:80"},
                                           BadCase{"Scheme", "http://x:80"}, BadCase{"Spaces", " :80"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace mka::net
