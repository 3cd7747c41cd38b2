#pragma once
// A directory laid out the way kubelet projects a Secret or ConfigMap volume, updated the
// way kubelet's AtomicWriter does it:
//   dir/..2026_01_01_00_00_00.123456789/tls.crt   (a fresh timestamped directory per update)
//   dir/..data -> ..2026_01_01_00_00_00.123456789 (swapped by renaming a new link over it)
//   dir/tls.crt -> ..data/tls.crt                  (stable user-visible names)
// so a watcher sees the visible path keep its inode while its target changes.
//
// Threads: owned by one test.

#include <filesystem>
#include <map>
#include <string>

namespace mka::test {

class SecretVolume {
 public:
  explicit SecretVolume(std::filesystem::path dir);

  // Publishes a new version with exactly these files (name -> content) in one atomic swap,
  // then removes the previous version's directory, like kubelet.
  void update(const std::map<std::string, std::string>& files);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path operator/(const std::string& name) const { return dir_ / name; }

 private:
  std::filesystem::path dir_;
  int version_ = 0;
};

}  // namespace mka::test
