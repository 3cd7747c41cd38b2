#pragma once
// What each fuzz target checks, shared by the libFuzzer entry points (fuzz/*_fuzz.cpp, clang
// only) and by the regression test that replays every input a fuzzer ever found
// (test/fixtures/fuzz-regressions/, in every build). A check returns normally when the input
// was handled as it should be, whatever the input; it throws CheckFailed when the parser broke
// its contract (a libFuzzer entry point turns that into an abort, a test into a failure).
// Crashes, hangs and sanitizer reports are caught by the sanitizers and libFuzzer themselves.
//
// Threads: each check may be called from one thread at a time.

#include <stdexcept>
#include <string_view>

namespace mka::fuzz {

class CheckFailed : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Any bytes as a configuration file: a configuration or field errors, never both or neither.
void checkConfiguration(std::string_view input);
// Any bytes as a kubeconfig (file or Secret): parsed, or refused with mka::Error.
void checkKubeconfig(std::string_view input);
// Any bytes as YAML manifests (the sandbox's CRD files and request bodies): JSON documents that
// toYaml writes back to the same JSON, or refused with mka::Error.
void checkYaml(std::string_view input);
// The first byte picks a webhook path and content type, the rest is the body: a JSON answer,
// never a 500, and the same answer whether the lean decoder or the DOM decoder reads the body.
void checkAdmissionReview(std::string_view input);
// Any bytes as a protobuf request body to the sandbox: a JSON object with a kind, or 400/415.
void checkKubeProtobuf(std::string_view input);
// The first byte picks a sandbox parser (label or field selector, merge, JSON or strategic
// merge patch on a fixed object), the rest is its input: a result, or an ApiError.
void checkSandboxRequest(std::string_view input);

}  // namespace mka::fuzz
