#pragma once
// meta.k8s.io/v1 Table rendering, what kube-apiserver answers `kubectl get` (Accept:
// application/json;as=Table;v=v1;g=meta.k8s.io): a Name column, the printer columns of the
// kind (a CRD's additionalPrinterColumns, defaulted to Age; kube-apiserver's own columns for
// namespaces, configmaps, secrets and CRDs; Name and Age otherwise), and one row per object.
//
// Threads: pure functions.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/sandbox/resource_registry.h"

namespace mka::sandbox {

enum class TableObjects { None, Metadata, Object };  // ?includeObject=

// Parses ?includeObject= ("" = Metadata); throws ApiError 400 on anything else.
TableObjects parseIncludeObject(const std::string& value);

// `objectOrList` is one object or a <Kind>List (its metadata becomes the Table's).
nlohmann::json toTable(const ResourceType& type, const std::string& version, const nlohmann::json& objectOrList,
                       Clock::TimePoint now, TableObjects include = TableObjects::Metadata);

// kube's duration.HumanDuration ("45s", "3m20s", "5h", "12d").
std::string humanDuration(std::chrono::seconds d);

// Evaluates the subset of JSONPath printer columns use (.a.b, [n], [*], ['key'],
// [?(@.x=="y")]) and returns every match, in order. Throws mka::Error on a malformed path.
std::vector<nlohmann::json> evalJsonPath(const nlohmann::json& root, std::string_view path);

}  // namespace mka::sandbox
