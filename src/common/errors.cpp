#include "mka/common/errors.h"

namespace mka {

std::string FieldError::toString() const {
  std::string out = path.empty() ? problem : path + ": " + problem;
  if (!fix.empty()) out += ": " + fix;
  return out;
}

std::string joinErrors(const FieldErrors& errors, std::string_view separator) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += separator;
    out += e.toString();
  }
  return out;
}

static std::string summary(const FieldErrors& errors) {
  return errors.size() == 1 ? errors.front().toString()
                            : std::to_string(errors.size()) + " errors:\n" + joinErrors(errors);
}

ValidationError::ValidationError(FieldErrors errors) : Error(summary(errors)), errors_(std::move(errors)) {}

}  // namespace mka
