#pragma once
// The stand-ins' logger.

#include "mka/common/log.h"

namespace mka::standin {

inline spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = namedLogger("standin");
  return *instance;
}

}  // namespace mka::standin
