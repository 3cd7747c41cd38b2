#include "table.h"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <functional>
#include <optional>

#include "mka/common/errors.h"
#include "mka/sandbox/api_error.h"
#include "rendering.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

// The column descriptions kube-apiserver sends (from ObjectMeta's swagger docs).
constexpr const char* kNameDescription =
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
constexpr const char* kCreationDescription =
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It "
    "is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More "
    "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

json column(const std::string& name, const std::string& type, const std::string& format, const std::string& description,
            int priority = 0) {
  return {{"name", name}, {"type", type}, {"format", format}, {"description", description}, {"priority", priority}};
}

// "2024-05-01T10:00:00Z" (what the sandbox writes); nullopt when it is not RFC 3339 UTC.
std::optional<Clock::TimePoint> parseTimestamp(const std::string& text) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char zone = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &year, &month, &day, &hour, &minute, &second, &zone) !=
      7) {
    return std::nullopt;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return Clock::TimePoint{std::chrono::seconds{::timegm(&tm)}};
}

// metatable.ConvertToHumanReadableDateType.
std::string age(const json& timestamp, Clock::TimePoint now) {
  if (!timestamp.is_string()) return "<unknown>";
  const auto t = parseTimestamp(timestamp.get<std::string>());
  if (!t) return "<invalid>";
  return humanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

const json& field(const json& object, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return kNull;
    auto it = at->find(key);
    if (it == at->end()) return kNull;
    at = &*it;
  }
  return *at;
}

std::size_t countEntries(const json& object, const char* key) {
  const json& v = field(object, {key});
  return v.is_object() ? v.size() : 0;
}

// The columns after Name, and how to fill them, for one kind.
struct Columns {
  std::vector<json> definitions;                  // without Name
  std::function<json(const json& object)> cells;  // a JSON array of the cells after Name
};

// apiextensions' cellForJSONValue plus the JSONPath printer for string columns.
json printerCell(const json& column, const json& object, Clock::TimePoint now) {
  const std::string type = column.value("type", "string");
  std::vector<json> results;
  try {
    results = evalJsonPath(object, column.value("jsonPath", ""));
  } catch (const Error&) {
    return nullptr;
  }
  if (results.empty() || results.front().is_null()) return nullptr;
  const json& value = results.front();
  if (type == "date") {
    return value.is_string() ? json(age(value, now)) : json(nullptr);
  }
  if (type == "integer") return value.is_number() ? json(value.get<std::int64_t>()) : json(nullptr);
  if (type == "number") return value.is_number() ? value : json(nullptr);
  if (type == "boolean") return value.is_boolean() ? value : json(nullptr);
  // string: what `kubectl -o jsonpath` would print.
  return value.is_string() ? value.get<std::string>() : value.dump();
}

Columns columnsFor(const ResourceType& type, const std::string& version, Clock::TimePoint now) {
  Columns out;
  const bool builtin = type.builtin;
  const std::string group = type.group;
  if (builtin && group.empty() && type.plural == "namespaces") {
    out.definitions = {column("Status", "string", "", "The status of the namespace"),
                       column("Age", "string", "", kCreationDescription)};
    out.cells = [now](const json& o) {
      const json& phase = field(o, {"status", "phase"});
      return json::array(
          {phase.is_string() ? phase : json("Active"), age(field(o, {"metadata", "creationTimestamp"}), now)});
    };
  } else if (builtin && group.empty() && type.plural == "configmaps") {
    out.definitions = {column("Data", "string", "", "Number of data in configmap"),
                       column("Age", "string", "", kCreationDescription)};
    out.cells = [now](const json& o) {
      return json::array({countEntries(o, "data") + countEntries(o, "binaryData"),
                          age(field(o, {"metadata", "creationTimestamp"}), now)});
    };
  } else if (builtin && group.empty() && type.plural == "secrets") {
    out.definitions = {column("Type", "string", "", "The type of the secret"),
                       column("Data", "string", "", "Number of data in secret"),
                       column("Age", "string", "", kCreationDescription)};
    out.cells = [now](const json& o) {
      const json& t = field(o, {"type"});
      return json::array({t.is_string() ? t : json("Opaque"), countEntries(o, "data"),
                          age(field(o, {"metadata", "creationTimestamp"}), now)});
    };
  } else if (builtin && type.plural == "customresourcedefinitions") {
    // kube-apiserver's default table convertor: the timestamp itself.
    out.definitions = {column("Created At", "date", "", kCreationDescription)};
    out.cells = [](const json& o) {
      const json& t = field(o, {"metadata", "creationTimestamp"});
      return json::array({t.is_string() ? t : json(nullptr)});
    };
  } else if (!builtin) {
    const ResourceVersionInfo* info = type.version(version);
    json printer = info != nullptr ? info->printerColumns : json::array();
    if (!printer.is_array() || printer.empty()) {
      // apiextensions defaults an empty additionalPrinterColumns to Age.
      printer = json::array({{{"name", "Age"}, {"type", "date"}, {"jsonPath", ".metadata.creationTimestamp"}}});
    }
    for (const auto& c : printer) {
      out.definitions.push_back(column(c.value("name", ""), c.value("type", "string"), c.value("format", ""),
                                       c.value("description", ""), c.value("priority", 0)));
    }
    out.cells = [printer, now](const json& o) {
      json cells = json::array();
      for (const auto& c : printer) cells.push_back(printerCell(c, o, now));
      return cells;
    };
  } else {
    out.definitions = {column("Age", "string", "", kCreationDescription)};
    out.cells = [now](const json& o) { return json::array({age(field(o, {"metadata", "creationTimestamp"}), now)}); };
  }
  return out;
}

json rowObject(const json& object, TableObjects include) {
  return include == TableObjects::Object ? object : partialObjectMetadata(object);
}

// --- JSONPath ------------------------------------------------------------------------------

class PathParser {
 public:
  PathParser(std::string_view path, std::string_view whole) : p_(path), whole_(whole) {}

  bool done() const { return i_ >= p_.size(); }
  char peek() const { return i_ < p_.size() ? p_[i_] : '\0'; }
  bool take(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  std::string identifier() {
    const std::size_t start = i_;
    while (i_ < p_.size() &&
           (std::isalnum(static_cast<unsigned char>(p_[i_])) != 0 || p_[i_] == '_' || p_[i_] == '-' || p_[i_] == '$')) {
      ++i_;
    }
    if (start == i_) fail("expected a field name");
    return std::string(p_.substr(start, i_ - start));
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    ++i_;
    const std::size_t start = i_;
    while (i_ < p_.size() && p_[i_] != q) ++i_;
    if (i_ >= p_.size()) fail("unterminated string");
    std::string out(p_.substr(start, i_ - start));
    ++i_;
    return out;
  }
  std::string until(char c) {
    const std::size_t start = i_;
    while (i_ < p_.size() && p_[i_] != c) ++i_;
    return std::string(p_.substr(start, i_ - start));
  }
  void skipSpaces() {
    while (peek() == ' ') ++i_;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("JSONPath \"" + std::string(whole_) + "\": " + why + " at offset " + std::to_string(i_) +
                ": printer columns take simple paths such as .status.conditions[?(@.type==\"Ready\")].status");
  }

 private:
  std::string_view p_;
  std::string_view whole_;
  std::size_t i_ = 0;
};

std::vector<json> children(const std::vector<json>& nodes, const std::string& key) {
  std::vector<json> out;
  for (const auto& n : nodes) {
    if (key == "*") {
      if (n.is_object() || n.is_array())
        for (const auto& v : n) out.push_back(v);
    } else if (n.is_object()) {
      auto it = n.find(key);
      if (it != n.end()) out.push_back(*it);
    }
  }
  return out;
}

json literal(PathParser& parser) {
  parser.skipSpaces();
  if (parser.peek() == '\'' || parser.peek() == '"') return parser.quoted();
  std::string text;
  while (!parser.done() && parser.peek() != ')' && parser.peek() != ' ') {
    text += parser.peek();
    parser.take(parser.peek());
  }
  if (text == "true") return true;
  if (text == "false") return false;
  if (text == "null") return nullptr;
  try {
    return json::parse(text);
  } catch (const json::exception&) {
    parser.fail("expected a literal");
  }
}

}  // namespace

std::vector<json> evalJsonPath(const json& root, std::string_view path) {
  const std::string_view whole = path;
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') path = path.substr(1, path.size() - 2);
  PathParser parser(path, whole);
  parser.take('$');
  std::vector<json> nodes{root};
  while (!parser.done()) {
    if (parser.take('.')) {
      if (parser.take('*')) {
        nodes = children(nodes, "*");
      } else {
        nodes = children(nodes, parser.identifier());
      }
      continue;
    }
    parser.expect('[');
    if (parser.take('*')) {
      nodes = children(nodes, "*");
    } else if (parser.peek() == '\'' || parser.peek() == '"') {
      nodes = children(nodes, parser.quoted());
    } else if (parser.take('?')) {
      parser.expect('(');
      parser.skipSpaces();
      parser.expect('@');
      std::vector<std::string> fieldPath;
      while (parser.take('.')) fieldPath.push_back(parser.identifier());
      parser.skipSpaces();
      std::optional<bool> equal;
      std::optional<json> expected;
      if (parser.take('=')) {
        parser.expect('=');
        equal = true;
      } else if (parser.take('!')) {
        parser.expect('=');
        equal = false;
      }
      if (equal) expected = literal(parser);
      parser.skipSpaces();
      parser.expect(')');
      std::vector<json> out;
      for (const auto& n : nodes) {
        if (!n.is_array()) continue;
        for (const auto& item : n) {
          std::vector<json> value{item};
          for (const auto& f : fieldPath) value = children(value, f);
          const bool present = !value.empty();
          const bool keep = !equal ? present : (present && value.front() == *expected) == *equal;
          if (keep) out.push_back(item);
        }
      }
      nodes = std::move(out);
    } else {
      const std::string digits = parser.until(']');
      long index = 0;
      try {
        std::size_t used = 0;
        index = std::stol(digits, &used);
        if (used != digits.size()) parser.fail("expected an index");
      } catch (const std::logic_error&) {
        parser.fail("expected an index");
      }
      std::vector<json> out;
      for (const auto& n : nodes) {
        if (!n.is_array()) continue;
        const long size = static_cast<long>(n.size());
        const long at = index < 0 ? size + index : index;
        if (at >= 0 && at < size) out.push_back(n.at(static_cast<std::size_t>(at)));
      }
      nodes = std::move(out);
    }
    parser.expect(']');
  }
  return nodes;
}

TableObjects parseIncludeObject(const std::string& value) {
  if (value.empty() || value == "Metadata") return TableObjects::Metadata;
  if (value == "None") return TableObjects::None;
  if (value == "Object") return TableObjects::Object;
  throw ApiError::badRequest("includeObject: Unsupported value: \"" + value +
                             "\": supported values: \"None\", \"Metadata\", \"Object\"");
}

json toTable(const ResourceType& type, const std::string& version, const json& objectOrList, Clock::TimePoint now,
             TableObjects include) {
  const Columns columns = columnsFor(type, version, now);
  json definitions = json::array({column("Name", "string", "name", kNameDescription)});
  for (const auto& d : columns.definitions) definitions.push_back(d);

  const bool isList = objectOrList.contains("items") && objectOrList.at("items").is_array();
  json metadata = json::object();
  if (isList && objectOrList.contains("metadata")) {
    metadata = objectOrList.at("metadata");
  } else if (!isList) {
    const json& rv = field(objectOrList, {"metadata", "resourceVersion"});
    if (rv.is_string()) metadata["resourceVersion"] = rv;
  }
  json rows = json::array();
  auto addRow = [&](const json& object) {
    json cells = json::array({field(object, {"metadata", "name"})});
    for (auto& c : columns.cells(object)) cells.push_back(std::move(c));
    json row = {{"cells", std::move(cells)}};
    if (include != TableObjects::None) row["object"] = rowObject(object, include);
    rows.push_back(std::move(row));
  };
  if (isList) {
    for (const auto& item : objectOrList.at("items")) addRow(item);
  } else {
    addRow(objectOrList);
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", std::move(metadata)},
          {"columnDefinitions", std::move(definitions)},
          {"rows", std::move(rows)}};
}

std::string humanDuration(std::chrono::seconds d) {
  const long long seconds = d.count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const long long minutes = seconds / 60;
  if (minutes < 10) {
    const long long s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m" : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const long long hours = seconds / 3600;
  if (hours < 8) {
    const long long m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h" : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const long long h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d" : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const long long dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

}  // namespace mka::sandbox
