#pragma once
// What an answer is rendered as, negotiated from the request's Accept header as kube-apiserver
// negotiates its output media type: the object itself, a meta.k8s.io/v1 Table (`kubectl get`,
// see table.h), or its metadata only, PartialObjectMetadata(List) (client-go's metadata client,
// controller-runtime's metadata-only caches, and writers that read nothing of an answer but the
// new resourceVersion). kube-apiserver renders every answer that way: reads, watch events and
// the objects create, update, patch and delete answer.
//
// Threads: pure functions.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mka::sandbox {

enum class Rendering { Object, Table, PartialObjectMetadata, PartialObjectMetadataList };

// The first item of `accept` the sandbox can serve, in the header's order:
// - "application/json" (also "application/*", "*/*", or an empty header): Object;
// - "application/json;as=Table;g=meta.k8s.io;v=v1": Table;
// - "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1": PartialObjectMetadata, and
//   as=PartialObjectMetadataList: PartialObjectMetadataList.
// Items it cannot serve (protobuf, YAML, other versions of meta.k8s.io) are passed over; when
// none is left the object is served (kube-apiserver answers 406 there; kubectl and client-go
// always list application/json last).
Rendering renderingFor(std::string_view accept);

// {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":<the object's>}.
nlohmann::json partialObjectMetadata(const nlohmann::json& object);
// The same as JSON text, written around the object's metadata instead of a copy of it.
std::string partialObjectMetadataText(const nlohmann::json& object);
// A <Kind>List as PartialObjectMetadataList: its metadata, and each item's.
nlohmann::json partialObjectMetadataList(const nlohmann::json& list);

// Throws ApiError 406 NotAcceptable, in kube-apiserver's words, when `rendering` does not fit
// the answer (of kind `kind`): PartialObjectMetadata asked of a list, PartialObjectMetadataList
// asked of one object.
void checkRenderable(Rendering rendering, bool isList, const std::string& kind);

}  // namespace mka::sandbox
