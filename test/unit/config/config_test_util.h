#pragma once
// Helpers shared by the config tests.

#include <string>
#include <vector>

#include "mka/config/loader.h"

namespace mka::config::test {

inline std::string adapterDoc(const std::string& body) {
  return "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: AdapterConfiguration\n" + body;
}

inline std::string kueueDoc(const std::string& body, const std::string& version = "v1beta2") {
  return "apiVersion: config.kueue.x-k8s.io/" + version + "\nkind: Configuration\n" + body;
}

inline std::vector<std::string> rendered(const FieldErrors& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.toString());
  return out;
}

inline std::vector<std::string> paths(const FieldErrors& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.path);
  return out;
}

}  // namespace mka::config::test
