// libFuzzer target: any bytes sent as a protobuf request body to the sandbox (kubectl's typed
// commands send application/vnd.kubernetes.protobuf) must decode to a JSON object or be refused
// with a 400/415 ApiError: never a crash, hang, over-read or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/protobuf.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    const auto object = mka::sandbox::decodeKubernetesProtobuf(body);
    if (!object.is_object() || !object.contains("kind")) std::abort();
    (void)object.dump();  // throws (and fails the run) on a string that is not UTF-8
  } catch (const mka::sandbox::ApiError& e) {
    if (e.code() != 400 && e.code() != 415) std::abort();
  }
  return 0;
}
