// Replays test/fixtures/fuzz-regressions/<target>/* through the fuzz targets' checks
// (fuzz/checks): each input through its own target's check, and every input through every
// check, since bytes that broke one parser are good bytes to try on the others.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "checks/checks.h"

namespace mka::fuzz {
namespace {

namespace fs = std::filesystem;

using Check = void (*)(std::string_view);

const std::map<std::string, Check>& checks() {
  static const std::map<std::string, Check> all = {
      {"config", checkConfiguration},
      {"kubeconfig", checkKubeconfig},
      {"yaml", checkYaml},
      {"admission_review", checkAdmissionReview},
      {"kube_protobuf", checkKubeProtobuf},
      {"sandbox_request", checkSandboxRequest},
  };
  return all;
}

const fs::path kRoot = fs::path(MKA_FIXTURES_DIR) / "fuzz-regressions";

struct Input {
  std::string target;
  fs::path file;
  std::string bytes;
};

std::vector<Input> inputs() {
  std::vector<Input> out;
  for (const auto& dir : fs::directory_iterator(kRoot)) {
    if (!dir.is_directory()) continue;
    for (const auto& file : fs::directory_iterator(dir.path())) {
      std::ifstream in(file.path(), std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      out.push_back({dir.path().filename().string(), file.path(), bytes.str()});
    }
  }
  return out;
}

TEST(FuzzRegressions, EveryFolderNamesATarget) {
  for (const auto& dir : fs::directory_iterator(kRoot)) {
    if (!dir.is_directory()) continue;
    SCOPED_TRACE(dir.path().string());
    EXPECT_TRUE(checks().contains(dir.path().filename().string()))
        << "name the folder after a fuzz target without _fuzz: config, kubeconfig, yaml, admission_review, "
           "kube_protobuf or sandbox_request";
  }
}

TEST(FuzzRegressions, EachInputPassesItsOwnTargetsCheck) {
  const auto all = inputs();
  ASSERT_GE(all.size(), 3u);  // the folder is found and holds the known attacks
  for (const auto& input : all) {
    SCOPED_TRACE(input.file.string());
    const auto check = checks().find(input.target);
    ASSERT_NE(check, checks().end());
    EXPECT_NO_THROW(check->second(input.bytes));
  }
}

TEST(FuzzRegressions, EveryInputPassesEveryCheck) {
  for (const auto& input : inputs()) {
    for (const auto& [name, check] : checks()) {
      SCOPED_TRACE(input.file.string() + " through " + name);
      EXPECT_NO_THROW(check(input.bytes));
    }
  }
}

}  // namespace
}  // namespace mka::fuzz
