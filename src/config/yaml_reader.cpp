#include "yaml_reader.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <set>

#include "mka/common/strings.h"
#include "mka/yaml/json.h"

namespace mka::config::detail {
namespace {

// What a scalar reads as in JSON terms, as Kubernetes decodes it: a quoted scalar is a string,
// which Kubernetes refuses where a number or a boolean is expected, and so do we. Null for a
// collection or a value JSON cannot hold (.nan, .inf).
nlohmann::json resolved(const yaml::Node& node) {
  if (!node.isScalar()) return nullptr;
  try {
    return yaml::scalarToJson(node);
  } catch (const yaml::ConversionError&) {
    return nullptr;
  }
}

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

void YamlReader::noteLine(const std::string& path, const yaml::Node& node) { lines_.emplace(path, node.mark().line); }

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

std::string describe(const yaml::Node& node) {
  if (node.isMapping()) return "a mapping";
  if (node.isSequence()) return "a list";
  if (node.isNull()) return "null";
  return quote(node.scalar());
}

MapReader::MapReader(YamlReader& reader, const yaml::Node* node, std::string path, std::string_view example)
    : reader_(reader), node_(node), path_(std::move(path)) {
  if (!node_ || node_->isNull()) return;
  if (!node_->isMapping()) {
    reader_.error(path_, "must be a mapping of key: value pairs, not " + describe(*node_),
                  example.empty() ? "indent its fields below it, one key: value per line"
                                  : "write it as " + std::string(example));
    return;
  }
  isMap_ = true;
  for (const auto& entry : node_->entries())
    if (entry.key->isScalar()) reader_.noteLine(pathOf(entry.key->scalar()), *entry.key);
}

const yaml::Node* MapReader::get(std::string_view key) const {
  if (!isMap_) return nullptr;
  // The last occurrence wins, as in Go's decoders; duplicates are reported by checkKeys.
  const auto* found = node_->find(key);
  return found && !found->isNull() ? found : nullptr;
}

bool MapReader::hasKey(std::string_view key) const {
  if (!isMap_) return false;
  for (const auto& entry : node_->entries())
    if (entry.key->isScalar() && entry.key->scalar() == key) return true;
  return false;
}

void MapReader::read(std::string_view key, std::string& out) {
  const auto* node = get(key);
  if (!node) return;
  if (!node->isScalar()) {
    reader_.error(pathOf(key), "must be a string, not " + describe(*node),
                  "write a single value on the same line as the key");
    return;
  }
  out = node->scalar();
}

void MapReader::read(std::string_view key, bool& out) {
  const auto* node = get(key);
  if (!node) return;
  const auto value = resolved(*node);
  if (!value.is_boolean()) {
    reader_.error(pathOf(key), "must be true or false, not " + describe(*node), "write true or false without quotes");
    return;
  }
  out = value.get<bool>();
}

void MapReader::read(std::string_view key, int& out) {
  const auto* node = get(key);
  if (!node) return;
  const auto value = resolved(*node);
  const bool fits =
      value.is_number_integer() &&
      (value.is_number_unsigned() ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT_MAX)
                                  : value.get<std::int64_t>() >= INT_MIN && value.get<std::int64_t>() <= INT_MAX);
  if (!fits) {
    reader_.error(pathOf(key), "must be a whole number, not " + describe(*node), "write a whole number without quotes");
    return;
  }
  out = value.get<int>();
}

void MapReader::read(std::string_view key, double& out) {
  const auto* node = get(key);
  if (!node) return;
  const auto value = resolved(*node);
  if (!value.is_number()) {
    reader_.error(pathOf(key), "must be a number, not " + describe(*node),
                  "write a number without quotes, such as 50 or 2.5");
    return;
  }
  out = value.get<double>();
}

void MapReader::read(std::string_view key, Duration& out) {
  const auto* node = get(key);
  if (!node) return;
  std::optional<Duration> value;
  if (node->isScalar()) value = parseDuration(node->scalar());
  if (!value) {
    auto problem = "must be a duration such as 1m or 30s, not " + describe(*node);
    if (node->isScalar() && isAllDigits(node->scalar()))
      reader_.error(pathOf(key), problem, "add a unit, for example " + node->scalar() + "s or " + node->scalar() + "m");
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
  for (const auto& entry : node_->entries()) {
    if (!entry.key->isScalar()) {
      reader_.error(path_, "has a key that is " + describe(*entry.key) + ", not a name",
                    "write every key as a plain name");
      continue;
    }
    const auto& key = entry.key->scalar();
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
    } else {
      reader_.error(pathOf(key), "unknown field of Kueue's Configuration",
                    "remove it: Kueue decodes its Configuration strictly and would not start with it; settings of "
                    "multikueue-adapter alone go in an AdapterConfiguration (apiVersion: "
                    "config.multikueue-adapter.dev/v1alpha1)");
    }
  }
}

}  // namespace mka::config::detail
