#include "mka/app/command_setup.h"

#include <algorithm>

#include "mka/config/loader.h"

namespace mka::app {

std::optional<config::Configuration> loadCommandConfiguration(const std::filesystem::path& file, std::ostream& err) {
  if (file.empty()) return config::Configuration{};
  auto loaded = config::loadConfigurationFile(file);
  if (!loaded.ok()) {
    err << "error: " << file.string() << ": not a valid configuration (validate-config says why)\n";
    return std::nullopt;
  }
  return *loaded.config;
}

kube::RestConfig managerRestConfig(const ManagerAccess& access) {
  return kube::loadRestConfig(kube::LoadingRules::fromEnvironment(access.kubeconfig, access.context));
}

std::unique_ptr<kube::Client> managerClient(const kube::RestConfig& config, const std::string& userAgent) {
  kube::ClientOptions options;
  options.userAgent = userAgent;
  return std::make_unique<kube::Client>(std::make_shared<kube::RestClient>(config, options));
}

ManagerConnection connectManager(const ManagerAccess& access, const std::string& userAgent) {
  auto rest = managerRestConfig(access);
  auto client = managerClient(rest, userAgent);
  return {std::move(rest), std::move(client)};
}

const Clock& commandClock(const Clock* given) {
  static const SystemClock systemClock;
  return given != nullptr ? *given : systemClock;
}

void printColumns(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<std::size_t> width;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  for (const auto& row : rows) {
    std::string text;
    for (std::size_t i = 0; i < row.size(); ++i) {
      text += row[i];
      if (i + 1 < row.size()) text += std::string(width[i] - row[i].size() + 3, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  }
}

}  // namespace mka::app
