#pragma once
// The generic external-framework adapter's object shaping (KUEUE-MULTIKUEUE.md §2.4-§2.6,
// SPEC §5), as pure functions over unstructured objects so that the dispatch loop's I/O and
// this bookkeeping are tested apart:
// - the remote Workload clone and the remote job copy (marker removed wherever the framework
//   keeps it, origin label, prebuilt-workload link, metadata reduced);
// - the status to copy back from the worker's job (a JSON merge patch, nothing when unchanged);
// - ownership of remote objects by origin, and reading the prebuilt-workload link.
//
// Threads: pure functions.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/config/configuration.h"

namespace mka::multikueue {

// How the prebuilt-workload link is written: Kueue >= 0.18 reads the annotation
// (WorkloadIdentifierAnnotations); older workers read only the label, which can hold at most
// 63 characters.
enum class PrebuiltLink {
  Annotation,          // annotation only
  AnnotationAndLabel,  // both when the name fits in a label (our default: any worker version)
};

// The Workload to create on a worker (§2.4): apiVersion, kind, metadata reduced to name,
// namespace, labels and annotations (job-uid label removed, origin label added), the local
// spec, no status.
nlohmann::json remoteWorkload(const nlohmann::json& local, const std::string& origin);

// The job to create on a worker (§2.5): apiVersion, kind, metadata reduced to name, namespace,
// labels and annotations, the local spec; the managedBy marker removed where `framework` keeps
// it; origin label and prebuilt-workload link (= the Workload's name) added.
nlohmann::json remoteJob(const nlohmann::json& local, const config::ExternalFramework& framework,
                         const std::string& workloadName, const std::string& origin,
                         PrebuiltLink link = PrebuiltLink::AnnotationAndLabel);

// The JSON merge patch that makes the local job's status equal to the remote's (fields gone
// from the remote are removed locally), or nullopt when there is nothing to send: the remote
// has no status yet, or both are equal already.
std::optional<nlohmann::json> statusPatch(const nlohmann::json& local, const nlohmann::json& remote);

// The Workload a remote job is linked to (annotation first, then label, as Kueue >= 0.18
// reads it); nullopt when neither is set.
std::optional<std::string> prebuiltWorkloadName(const nlohmann::json& job);

// Whether a remote object was created by the manager with `origin` (§2.6). Throws mka::Error
// "multikueue origin is empty" for an empty origin, as Kueue does.
bool ownedByOrigin(const nlohmann::json& object, const std::string& origin);

}  // namespace mka::multikueue
