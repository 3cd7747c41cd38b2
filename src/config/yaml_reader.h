#pragma once
// Typed reads from a YAML node tree (mka/yaml) that record every problem with its field path instead of
// throwing, and remember the line each path was written on, so errors come out in file order.
// Internal to the config module.
//
// Threads: a YamlReader and its MapReaders live for one parse on the calling thread.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mka/common/duration.h"
#include "mka/common/errors.h"
#include "mka/yaml/document.h"

namespace mka::config::detail {

// What to do with a key the reader does not know.
enum class UnknownKeys {
  Reject,  // our own kind: every unknown key is an error
  // Kueue's kind: every unknown key is an error too, since Kueue decodes its Configuration
  // strictly and would not start with it; the fix says where our own settings go.
  KueueStrict,
};

class YamlReader {
 public:
  void error(std::string path, std::string problem, std::string fix);
  void noteLine(const std::string& path, const yaml::Node& node);
  // The line `path` (or its nearest written parent) was on; errors about fields that were
  // never written (defaults) sort last.
  int lineOf(std::string_view path) const;
  // Moves `more` into the collected errors.
  void append(FieldErrors more);
  // All errors, stably sorted by the line of their path.
  FieldErrors takeErrors();
  bool hasErrors() const { return !errors_.empty(); }

 private:
  FieldErrors errors_;
  std::map<std::string, int, std::less<>> lines_;
};

std::string childPath(std::string_view parent, std::string_view key);
std::string indexPath(std::string_view parent, std::size_t index);
// "a mapping", "a list", "a string", "null": for "must be X, not Y" messages.
std::string describe(const yaml::Node& node);
// `s` in double quotes, for error messages.
std::string quote(std::string_view s);

// A mapping node at a field path. Absent (nullptr) and null nodes read as an empty mapping, as
// Kubernetes treats them; a node of another type is reported once and then reads as empty. The
// tree the nodes belong to outlives the reader.
class MapReader {
 public:
  MapReader(YamlReader& reader, const yaml::Node* node, std::string path, std::string_view example = {});

  YamlReader& reader() const { return reader_; }
  const std::string& path() const { return path_; }
  // False when the node is absent, null, or not a mapping.
  bool isMap() const { return isMap_; }
  std::size_t size() const { return isMap_ ? node_->size() : 0; }
  std::string pathOf(std::string_view key) const { return childPath(path_, key); }
  // The value at `key` when present and not null; nullptr otherwise.
  const yaml::Node* get(std::string_view key) const;
  bool has(std::string_view key) const { return get(key) != nullptr; }
  // Written at all, even with a null value.
  bool hasKey(std::string_view key) const;

  // Each read leaves `out` unchanged when the key is absent or its value is wrong (reported).
  void read(std::string_view key, std::string& out);
  void read(std::string_view key, bool& out);
  void read(std::string_view key, int& out);
  void read(std::string_view key, double& out);
  void read(std::string_view key, Duration& out);
  MapReader child(std::string_view key, std::string_view example = {});

  // Reports keys outside `known` and keys written twice. The hint for an unknown key is
  // "did you mean ..." when one is close, else (Reject only) the list of known keys.
  void checkKeys(const std::vector<std::string>& known, UnknownKeys policy);

 private:
  YamlReader& reader_;
  const yaml::Node* node_ = nullptr;
  std::string path_;
  bool isMap_ = false;
};

}  // namespace mka::config::detail
