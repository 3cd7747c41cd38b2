#pragma once
// A YAML file a test wrote or ships, read as JSON through the product's reader.
//
// Threads: a pure function.

#include <filesystem>

#include <nlohmann/json.hpp>

namespace mka::test {

// The file's single document; fails the test (throws) when it holds another number of them.
nlohmann::json readYamlFile(const std::filesystem::path& file);

}  // namespace mka::test
