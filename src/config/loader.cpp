#include "mka/config/loader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>

#include "formats.h"
#include "mka/common/bounded_read.h"
#include "mka/common/strings.h"
#include "mka/yaml/document.h"

namespace mka::config {
namespace {

using detail::MapReader;
using detail::quote;
using detail::YamlReader;

const std::string kAdapterVersion(kAdapterApiVersion);
const std::string kKueueV1beta2 = std::string(kKueueConfigGroup) + "/v1beta2";
const std::string kKueueV1beta1 = std::string(kKueueConfigGroup) + "/v1beta1";
const std::string kAcceptedHeaders =
    "apiVersion: config.multikueue-adapter.dev/v1alpha1 with kind: AdapterConfiguration, or Kueue's apiVersion: "
    "config.kueue.x-k8s.io/v1beta2 (or v1beta1) with kind: Configuration";

// A configuration is a ConfigMap's worth of text at most.
const yaml::Limits kLimits = yaml::Limits::forSmallDocuments();

enum class Format { Adapter, Kueue };

// Reads apiVersion and kind and says which format the rest is in; nullopt after reporting.
std::optional<Format> detectFormat(YamlReader& reader, MapReader& top) {
  std::string apiVersion;
  std::string kind;
  top.read("apiVersion", apiVersion);
  top.read("kind", kind);

  const auto* apiVersionNode = top.get("apiVersion");
  const auto* kindNode = top.get("kind");
  std::optional<Format> format;
  if (apiVersion == kAdapterVersion) {
    format = Format::Adapter;
  } else if (apiVersion == kKueueV1beta2 || apiVersion == kKueueV1beta1) {
    format = Format::Kueue;
  } else if (apiVersionNode && !apiVersionNode->isScalar()) {
    // not a string: already reported by read()
  } else if (apiVersion.empty()) {
    std::string fix = "start the file with " + kAcceptedHeaders;
    if (kind == kAdapterKind) fix = "add apiVersion: " + kAdapterVersion;
    if (kind == kKueueKind) fix = "add apiVersion: " + kKueueV1beta2;
    reader.error("apiVersion", "is required", fix);
  } else if (apiVersion == "v1" && kind == "ConfigMap") {
    reader.error("", "is a ConfigMap manifest, not a configuration",
                 "validate the configuration inside it: save its data key (such as config.yaml) to a file and pass "
                 "that file");
    return std::nullopt;
  } else {
    auto suggestion = strings::didYouMean(apiVersion, {kAdapterVersion, kKueueV1beta2, kKueueV1beta1});
    reader.error("apiVersion", "unsupported value " + quote(apiVersion),
                 suggestion ? "did you mean " + quote(*suggestion) + "?" : "use " + kAcceptedHeaders);
  }

  const std::string expected(format == Format::Kueue ? kKueueKind : kAdapterKind);
  if (!kindNode || (kindNode->isScalar() && kind.empty())) {
    reader.error("kind", "is required", "add kind: " + expected);
  } else if (kindNode->isScalar() && format && kind != expected) {
    reader.error(
        "kind", "must be " + expected + " for apiVersion " + apiVersion + ", not " + quote(kind),
        format == Format::Adapter
            ? "set kind: AdapterConfiguration, or use apiVersion: " + kKueueV1beta2 + " for Kueue's Configuration"
            : "set kind: Configuration, or use apiVersion: " + kAdapterVersion + " for an AdapterConfiguration");
  }
  return reader.hasErrors() ? std::nullopt : format;
}

// A value error about a field that already failed to read (wrong type, broken entry) would
// repeat the same complaint; the read error is the useful one.
bool coveredBy(const FieldErrors& readErrors, const std::string& path) {
  for (const auto& e : readErrors) {
    if (e.path == path) return true;
    if (path.size() > e.path.size() && path.compare(0, e.path.size(), e.path) == 0 &&
        (path[e.path.size()] == '.' || path[e.path.size()] == '['))
      return true;
  }
  return false;
}

FieldErrors withPrefix(FieldErrors errors, std::string_view prefix) {
  if (prefix.empty()) return errors;
  for (auto& e : errors) {
    if (!e.path.empty())
      e.path = std::string(prefix) + e.path;
    else  // a document-level error names the document itself: "data[config.yaml]"
      e.path = std::string(prefix.back() == '.' ? prefix.substr(0, prefix.size() - 1) : prefix);
  }
  return errors;
}

LoadResult readDocument(std::string_view text) {
  YamlReader reader;
  std::vector<yaml::NodePtr> documents;
  try {
    for (auto& doc : yaml::parse(text, kLimits))
      if (!doc->isNull()) documents.push_back(std::move(doc));
  } catch (const yaml::SyntaxError& e) {
    reader.error("",
                 "invalid YAML at line " + std::to_string(e.mark().line + 1) + ", column " +
                     std::to_string(e.mark().column + 1) + ": " + e.problem(),
                 "fix the syntax there: indent with spaces, put a space after each ':', and close every [ and {");
    return {std::nullopt, reader.takeErrors()};
  } catch (const yaml::LimitError& e) {
    reader.error("", e.what(), "a configuration is a few dozen lines: check that this is the configuration file");
    return {std::nullopt, reader.takeErrors()};
  }
  if (documents.empty()) {
    reader.error("", "file is empty", "write a configuration starting with " + kAcceptedHeaders);
    return {std::nullopt, reader.takeErrors()};
  }
  if (documents.size() > 1) {
    reader.error("", "holds " + std::to_string(documents.size()) + " YAML documents",
                 "keep one configuration in the file and remove the other documents and their --- separators");
    return {std::nullopt, reader.takeErrors()};
  }
  const auto& root = *documents.front();
  if (!root.isMapping()) {
    reader.error("", "must be a mapping of key: value pairs, not " + detail::describe(root),
                 "write a configuration starting with " + kAcceptedHeaders);
    return {std::nullopt, reader.takeErrors()};
  }

  MapReader top(reader, &root, "");
  auto format = detectFormat(reader, top);
  if (!format) return {std::nullopt, reader.takeErrors()};

  Configuration config;
  if (*format == Format::Adapter)
    detail::readAdapterConfiguration(reader, root, config);
  else
    detail::readKueueConfiguration(reader, root, config);

  const auto readErrors = reader.takeErrors();
  reader.append(readErrors);
  for (auto& e : validateConfiguration(config))
    if (!coveredBy(readErrors, e.path)) reader.append({std::move(e)});
  auto errors = reader.takeErrors();
  if (!errors.empty()) return {std::nullopt, std::move(errors)};
  return {std::move(config), {}};
}

}  // namespace

LoadResult parseConfiguration(std::string_view text, std::string_view pathPrefix) {
  auto result = readDocument(text);
  result.errors = withPrefix(std::move(result.errors), pathPrefix);
  return result;
}

namespace {

// Reads one byte past the limit and no more: a device or a pipe has no size to check first.
// `sizeNote` says how large the input is, when that can be known.
LoadResult loadBounded(std::istream& in, const std::string& name, const std::function<std::string()>& sizeNote) {
  const auto text = readAtMost(in, kLimits.maxBytes);
  if (text.size() > kLimits.maxBytes) {
    return LoadResult{std::nullopt,
                      {FieldError{name, "is larger than 1 MiB" + sizeNote(),
                                  "point to the configuration file; a ConfigMap cannot hold more than 1 MiB"}}};
  }
  return parseConfiguration(text);
}

}  // namespace

LoadResult loadConfigurationFile(const std::filesystem::path& file) {
  auto fail = [&](std::string problem, std::string fix) {
    return LoadResult{std::nullopt, {FieldError{file.string(), std::move(problem), std::move(fix)}}};
  };
  std::error_code ec;
  auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status))
    return fail("cannot read the file: it does not exist",
                "check the path, or mount the ConfigMap that holds the configuration there");
  if (std::filesystem::is_directory(status))
    return fail("is a directory, not a file",
                "point to the configuration file inside it, such as " + (file / "config.yaml").string());
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    auto reason = std::string(std::strerror(errno));
    return fail("cannot read the file: " + reason, "make the file readable by the adapter's user");
  }
  return loadBounded(in, file.string(), [&] {
    const auto size = std::filesystem::file_size(file, ec);
    return ec ? std::string() : " (" + std::to_string(size) + " bytes)";
  });
}

LoadResult loadConfigurationStream(std::istream& in, const std::string& name) {
  return loadBounded(in, name, [] { return std::string(); });
}

}  // namespace mka::config
