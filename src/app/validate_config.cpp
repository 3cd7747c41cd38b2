#include "mka/app/validate_config.h"

#include <ostream>

#include "mka/config/loader.h"

namespace mka::app {

int validateConfigCommand(const std::filesystem::path& file, std::ostream& out, std::ostream& err) {
  auto result = config::loadConfigurationFile(file);
  if (!result.ok()) {
    for (const auto& error : result.errors) err << error.toString() << '\n';
    err << file.string() << ": " << result.errors.size() << (result.errors.size() == 1 ? " error" : " errors") << '\n';
    return 1;
  }
  const auto& cfg = *result.config;
  const char* format =
      cfg.source == config::Configuration::Source::KueueConfiguration ? "Kueue Configuration" : "AdapterConfiguration";
  out << file.string() << ": valid " << format << ", " << cfg.multiKueue.externalFrameworks.size()
      << " external framework(s):";
  for (const auto& fw : cfg.multiKueue.externalFrameworks) {
    out << ' ' << fw.gvk.dotted() << " (managedBy " << fw.managedBy.fieldPath() << ")";
  }
  out << '\n';
  return 0;
}

}  // namespace mka::app
