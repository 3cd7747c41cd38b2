#pragma once
// The bytes of a file under test/fixtures/.
//
// Threads: a pure function.

#include <string>
#include <string_view>

namespace mka::test {

// `relativePath` under test/fixtures/ ("fuzz-regressions/config/billion-laughs"); throws
// mka::Error when the file cannot be read.
std::string fixtureText(std::string_view relativePath);

}  // namespace mka::test
