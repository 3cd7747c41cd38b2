#pragma once
// Error types shared by every module. A user-facing error always says what went wrong,
// where (a field path or an object key) and how to fix it.

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mka {

// One problem found at one place. Rendered as "<path>: <problem>: <fix>" (the fix part is
// left out when empty), which is the format SPEC §3 asks of every validation message.
struct FieldError {
  std::string path;     // field path, e.g. "multiKueue.externalFrameworks[1].name"
  std::string problem;  // what is wrong, e.g. "must be in 'Kind.version.group' format"
  std::string fix;      // how to fix it, e.g. "write it as PipelineRun.v1.tekton.dev"

  std::string toString() const;
  bool operator==(const FieldError&) const = default;
};
using FieldErrors = std::vector<FieldError>;

// Joins rendered errors with `separator`.
std::string joinErrors(const FieldErrors& errors, std::string_view separator = "\n");

// Base of the exceptions thrown at module edges.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when an input document is invalid; carries every problem found, not only the first.
class ValidationError : public Error {
 public:
  explicit ValidationError(FieldErrors errors);
  const FieldErrors& errors() const noexcept { return errors_; }

 private:
  FieldErrors errors_;
};

}  // namespace mka
