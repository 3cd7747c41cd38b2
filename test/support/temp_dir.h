#pragma once
// A private directory under $TMPDIR, removed with everything in it when the object dies.
//
// Threads: owned by one test; path() may be read from any thread.

#include <filesystem>
#include <string>
#include <string_view>

namespace mka::test {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "mka-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

  // Writes `content` to path()/name (creating parent directories) and returns the full path.
  std::filesystem::path write(std::string_view name, std::string_view content) const;

 private:
  std::filesystem::path path_;
};

// Writes a whole file, replacing what was there (not atomic: truncate, then write).
void writeFile(const std::filesystem::path& file, std::string_view content);
// Writes next to `file` and renames over it, the way editors and config tools replace files.
void writeFileAtomically(const std::filesystem::path& file, std::string_view content);
std::string readFile(const std::filesystem::path& file);

}  // namespace mka::test
