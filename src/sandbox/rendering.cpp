#include "rendering.h"

#include <map>
#include <optional>
#include <string>

#include "mka/common/strings.h"
#include "mka/sandbox/api_error.h"

namespace mka::sandbox {

namespace {

using nlohmann::json;
using strings::trim;

// One media range of an Accept header ("application/json;as=Table;g=meta.k8s.io;v=v1"), or
// nullopt when the sandbox cannot answer in it.
std::optional<Rendering> renderingOf(std::string_view item) {
  std::map<std::string_view, std::string_view> params;
  std::string_view type;
  for (std::size_t start = 0; start <= item.size();) {
    const std::size_t end = std::min(item.find(';', start), item.size());
    const auto part = trim(item.substr(start, end - start));
    if (start == 0) {
      type = part;
    } else if (const auto eq = part.find('='); eq != std::string_view::npos) {
      params[trim(part.substr(0, eq))] = trim(part.substr(eq + 1));
    }
    start = end + 1;
  }
  const auto as = params.find("as");
  if (as == params.end()) {
    if (type == "application/json" || type == "application/*" || type == "*/*") return Rendering::Object;
    return std::nullopt;
  }
  if (type != "application/json") return std::nullopt;
  const auto g = params.find("g");
  const auto v = params.find("v");
  if (g == params.end() || g->second != "meta.k8s.io" || v == params.end() || v->second != "v1") return std::nullopt;
  if (as->second == "Table") return Rendering::Table;
  if (as->second == "PartialObjectMetadata") return Rendering::PartialObjectMetadata;
  if (as->second == "PartialObjectMetadataList") return Rendering::PartialObjectMetadataList;
  return std::nullopt;
}

json metadataOf(const json& object) {
  const auto it = object.find("metadata");
  return it != object.end() ? *it : json::object();
}

}  // namespace

Rendering renderingFor(std::string_view accept) {
  for (std::size_t start = 0; start < accept.size();) {
    const std::size_t end = std::min(accept.find(',', start), accept.size());
    if (const auto rendering = renderingOf(trim(accept.substr(start, end - start)))) return *rendering;
    start = end + 1;
  }
  return Rendering::Object;
}

json partialObjectMetadata(const json& object) {
  return {{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", metadataOf(object)}};
}

std::string partialObjectMetadataText(const json& object) {
  const auto it = object.find("metadata");
  const std::string metadata =
      it != object.end() ? it->dump(-1, ' ', false, json::error_handler_t::replace) : std::string("{}");
  return R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)" + metadata + "}";
}

json partialObjectMetadataList(const json& list) {
  json items = json::array();
  if (const auto it = list.find("items"); it != list.end() && it->is_array())
    for (const auto& item : *it) items.push_back(partialObjectMetadata(item));
  return {{"kind", "PartialObjectMetadataList"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", metadataOf(list)},
          {"items", std::move(items)}};
}

void checkRenderable(Rendering rendering, bool isList, const std::string& kind) {
  // kube-apiserver's words (endpoints/handlers/response.go), with the kind for its Go type.
  if (rendering == Rendering::PartialObjectMetadata && isList)
    throw ApiError::notAcceptable("you requested PartialObjectMetadata, but the requested object is a list (" + kind +
                                  ")");
  if (rendering == Rendering::PartialObjectMetadataList && !isList)
    throw ApiError::notAcceptable("you requested PartialObjectMetadataList, but the requested object is not a list (" +
                                  kind + ")");
}

}  // namespace mka::sandbox
