#pragma once
// The sandbox module's logger.

#include "mka/common/log.h"

namespace mka::sandbox {

inline spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = namedLogger("sandbox");
  return *instance;
}

}  // namespace mka::sandbox
