// The libFuzzer entry point of one target: MKA_FUZZ_CHECK names its check (checks/checks.h),
// set per target by fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "checks/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    mka::fuzz::MKA_FUZZ_CHECK(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const mka::fuzz::CheckFailed& e) {
    std::fprintf(stderr, "check failed: %s\n", e.what());
    std::abort();
  }
  return 0;
}
