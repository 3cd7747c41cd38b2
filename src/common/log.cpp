#include "mka/common/log.h"

namespace mka {

std::shared_ptr<spdlog::logger> namedLogger(const std::string& name) {
  if (auto existing = spdlog::get(name)) return existing;
  auto created = spdlog::default_logger()->clone(name);
  try {
    spdlog::register_logger(created);
  } catch (const spdlog::spdlog_ex&) {  // registered concurrently by another thread
    return spdlog::get(name);
  }
  return created;
}

}  // namespace mka
