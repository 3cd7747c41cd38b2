#include "support/secret_volume.h"

#include <chrono>
#include <cstdio>
#include <system_error>

#include "support/temp_dir.h"

namespace mka::test {

namespace fs = std::filesystem;

SecretVolume::SecretVolume(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }

void SecretVolume::update(const std::map<std::string, std::string>& files) {
  // kubelet names versions by time; a counter keeps names unique within one fast test.
  const auto nanos = std::chrono::system_clock::now().time_since_epoch().count();
  const std::string versionName = "..2026_" + std::to_string(nanos) + "." + std::to_string(++version_);
  fs::create_directory(dir_ / versionName);
  for (const auto& [name, content] : files) writeFile(dir_ / versionName / name, content);

  std::error_code ec;
  const fs::path oldVersion = fs::read_symlink(dir_ / "..data", ec);

  const fs::path tmpLink = dir_ / "..data_tmp";
  fs::remove(tmpLink, ec);
  fs::create_directory_symlink(versionName, tmpLink);
  fs::rename(tmpLink, dir_ / "..data");  // the atomic swap

  for (const auto& [name, content] : files) {
    const fs::path visible = dir_ / name;
    if (!fs::is_symlink(fs::symlink_status(visible))) fs::create_symlink(fs::path("..data") / name, visible);
  }
  if (!oldVersion.empty()) fs::remove_all(dir_ / oldVersion, ec);
}

}  // namespace mka::test
