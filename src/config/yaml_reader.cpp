#include "yaml_reader.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>

#include "mka/common/strings.h"

namespace mka::config::detail {
namespace {

// A quoted scalar is a string in JSON terms; Kubernetes refuses one where a number or a
// boolean is expected, and so do we.
bool isQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

bool isAllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Keys people write from memory of other docs; the extra sentence explains why ours is right.
std::string confusionNote(std::string_view key) {
  if (key == "multikueue")
    return " (Kueue's documentation spells the section \"multikueue\", but Kueue itself rejects that spelling)";
  return {};
}

}  // namespace

void YamlReader::error(std::string path, std::string problem, std::string fix) {
  errors_.push_back(FieldError{std::move(path), std::move(problem), std::move(fix)});
}

void YamlReader::noteLine(const std::string& path, const YAML::Node& node) {
  auto mark = node.Mark();
  if (!mark.is_null()) lines_.emplace(path, mark.line);
}

int YamlReader::lineOf(std::string_view path) const {
  if (path.empty()) return -1;  // document-level problems come first
  while (!path.empty()) {
    if (auto it = lines_.find(path); it != lines_.end()) return it->second;
    auto cut = path.find_last_of(".[");
    if (cut == std::string_view::npos) break;
    path = path.substr(0, cut);
  }
  return INT_MAX;
}

void YamlReader::append(FieldErrors more) {
  for (auto& e : more) errors_.push_back(std::move(e));
}

FieldErrors YamlReader::takeErrors() {
  std::stable_sort(errors_.begin(), errors_.end(),
                   [this](const FieldError& a, const FieldError& b) { return lineOf(a.path) < lineOf(b.path); });
  return std::exchange(errors_, {});
}

std::string childPath(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

std::string indexPath(std::string_view parent, std::size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return quote(node.Scalar());
    default:
      return "null";
  }
}

MapReader::MapReader(YamlReader& reader, YAML::Node node, std::string path, std::string_view example)
    : reader_(reader), node_(std::move(node)), path_(std::move(path)) {
  if (!node_.IsDefined() || node_.IsNull()) return;
  if (!node_.IsMap()) {
    reader_.error(path_, "must be a mapping of key: value pairs, not " + describe(node_),
                  example.empty() ? "indent its fields below it, one key: value per line"
                                  : "write it as " + std::string(example));
    return;
  }
  isMap_ = true;
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (it->first.IsScalar()) reader_.noteLine(pathOf(it->first.Scalar()), it->first);
}

YAML::Node MapReader::get(std::string_view key) const {
  // optional::emplace, not Node assignment: assigning to a yaml-cpp Node that already refers to
  // a node rewrites the tree it points into.
  std::optional<YAML::Node> found;
  if (isMap_) {
    // The last occurrence wins, as in Go's decoders; duplicates are reported by checkKeys.
    for (auto it = node_.begin(); it != node_.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == key) found.emplace(it->second);
  }
  if (!found || found->IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return *found;
}

bool MapReader::hasKey(std::string_view key) const {
  if (!isMap_) return false;
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == key) return true;
  return false;
}

void MapReader::read(std::string_view key, std::string& out) {
  auto node = get(key);
  if (!node.IsDefined()) return;
  if (!node.IsScalar()) {
    reader_.error(pathOf(key), "must be a string, not " + describe(node),
                  "write a single value on the same line as the key");
    return;
  }
  out = node.Scalar();
}

void MapReader::read(std::string_view key, bool& out) {
  auto node = get(key);
  if (!node.IsDefined()) return;
  bool value = false;
  if (!node.IsScalar() || isQuoted(node) || !YAML::convert<bool>::decode(node, value)) {
    reader_.error(pathOf(key), "must be true or false, not " + describe(node), "write true or false without quotes");
    return;
  }
  out = value;
}

void MapReader::read(std::string_view key, int& out) {
  auto node = get(key);
  if (!node.IsDefined()) return;
  long long value = 0;
  if (!node.IsScalar() || isQuoted(node) || !YAML::convert<long long>::decode(node, value) || value < INT_MIN ||
      value > INT_MAX) {
    reader_.error(pathOf(key), "must be a whole number, not " + describe(node), "write a whole number without quotes");
    return;
  }
  out = static_cast<int>(value);
}

void MapReader::read(std::string_view key, double& out) {
  auto node = get(key);
  if (!node.IsDefined()) return;
  double value = 0;
  if (!node.IsScalar() || isQuoted(node) || !YAML::convert<double>::decode(node, value) || !std::isfinite(value)) {
    reader_.error(pathOf(key), "must be a number, not " + describe(node),
                  "write a number without quotes, such as 50 or 2.5");
    return;
  }
  out = value;
}

void MapReader::read(std::string_view key, Duration& out) {
  auto node = get(key);
  if (!node.IsDefined()) return;
  std::optional<Duration> value;
  if (node.IsScalar()) value = parseDuration(node.Scalar());
  if (!value) {
    auto problem = "must be a duration such as 1m or 30s, not " + describe(node);
    if (node.IsScalar() && isAllDigits(node.Scalar()))
      reader_.error(pathOf(key), problem, "add a unit, for example " + node.Scalar() + "s or " + node.Scalar() + "m");
    else
      reader_.error(pathOf(key), problem,
                    "write a number followed by a unit (ns, us, ms, s, m or h), for example 90s or 1h30m");
    return;
  }
  out = *value;
}

MapReader MapReader::child(std::string_view key, std::string_view example) {
  return MapReader(reader_, get(key), pathOf(key), example);
}

void MapReader::checkKeys(const std::vector<std::string>& known, UnknownKeys policy) {
  if (!isMap_) return;
  std::set<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) {
      reader_.error(path_, "has a key that is " + describe(it->first) + ", not a name",
                    "write every key as a plain name");
      continue;
    }
    const auto& key = it->first.Scalar();
    if (!seen.insert(key).second) {
      reader_.error(pathOf(key), "is written more than once", "keep one of them; only the last one would count");
      continue;
    }
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    auto suggestion = strings::didYouMean(key, known);
    if (suggestion) {
      reader_.error(pathOf(key), "unknown field", "did you mean " + quote(*suggestion) + "?" + confusionNote(key));
    } else if (policy == UnknownKeys::Reject) {
      const auto where = path_.empty() ? std::string("at the top level") : "in " + path_;
      reader_.error(pathOf(key), "unknown field",
                    "remove it; the fields accepted " + where + " are " + strings::join(known, ", "));
    }
  }
}

}  // namespace mka::config::detail
