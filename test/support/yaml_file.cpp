#include "support/yaml_file.h"

#include <fstream>
#include <sstream>

#include "mka/common/errors.h"
#include "mka/yaml/json.h"

namespace mka::test {

nlohmann::json readYamlFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  auto documents = yaml::parseJson(text.str(), yaml::Limits::forManifests());
  if (documents.size() != 1)
    throw Error(file.string() + ": holds " + std::to_string(documents.size()) + " documents, not 1");
  return std::move(documents.front());
}

}  // namespace mka::test
