#include "mka/sandbox/crd_loader.h"

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <system_error>

#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/yaml/json.h"

namespace mka::sandbox {
namespace {

std::vector<nlohmann::json> readCrdFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string() + ": cannot read the CRD file: check that it exists and is readable");
  std::ostringstream text;
  text << in.rdbuf();

  std::vector<nlohmann::json> documents;
  try {
    documents = yaml::parseJson(text.str(), yaml::Limits::forManifests());
  } catch (const Error& e) {
    throw Error(file.string() + ": " + e.what());
  }
  if (documents.empty()) {
    throw Error(file.string() + ": holds no document: expected CustomResourceDefinition manifests");
  }
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const auto& doc = documents[i];
    const std::string where = file.string() + ": document " + std::to_string(i + 1);
    if (!doc.is_object()) throw Error(where + ": is not a mapping: expected a CustomResourceDefinition manifest");
    const auto kind = json_fields::stringMember(doc, "kind");
    const auto apiVersion = json_fields::stringMember(doc, "apiVersion");
    if (kind != "CustomResourceDefinition" || apiVersion != "apiextensions.k8s.io/v1") {
      throw Error(where + ": is " + (apiVersion.empty() ? "" : apiVersion + " ") + (kind.empty() ? "<no kind>" : kind) +
                  ", not apiextensions.k8s.io/v1 CustomResourceDefinition: keep only CRDs in CRD files");
    }
  }
  return documents;
}

// Parsing Kueue's Workload CRD (1.4 MB of YAML) takes a large fraction of a second, and every
// cluster of a sandbox loads the same files: parsed files are kept while they stay unchanged.
struct CachedFile {
  std::filesystem::file_time_type modified;
  std::uintmax_t size;
  std::vector<nlohmann::json> documents;
};

std::mutex cacheMutex;
std::map<std::filesystem::path, CachedFile> cache;

}  // namespace

std::vector<nlohmann::json> loadCrdFile(const std::filesystem::path& file) {
  std::error_code ec;
  const auto modified = std::filesystem::last_write_time(file, ec);
  const auto size = ec ? 0 : std::filesystem::file_size(file, ec);
  if (ec) return readCrdFile(file);  // reports why it cannot be read
  const auto key = std::filesystem::absolute(file, ec);
  {
    std::lock_guard lock(cacheMutex);
    auto it = cache.find(key);
    if (it != cache.end() && it->second.modified == modified && it->second.size == size) {
      return it->second.documents;
    }
  }
  auto documents = readCrdFile(file);
  std::lock_guard lock(cacheMutex);
  cache.insert_or_assign(key, CachedFile{modified, size, documents});
  return documents;
}

}  // namespace mka::sandbox
