#include "support/fixtures.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "mka/common/errors.h"

namespace mka::test {

std::string fixtureText(std::string_view relativePath) {
  const auto file = std::filesystem::path(MKA_FIXTURES_DIR) / relativePath;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read the fixture " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace mka::test
