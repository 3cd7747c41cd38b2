#pragma once
// The net module's logger.

#include "mka/common/log.h"

namespace mka::net {

inline spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = namedLogger("net");
  return *instance;
}

}  // namespace mka::net
