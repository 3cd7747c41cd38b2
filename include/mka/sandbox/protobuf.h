#pragma once
// Kubernetes' protobuf request bodies (Content-Type: application/vnd.kubernetes.protobuf), read
// for the few built-in kinds kubectl sends that way: its typed commands (`kubectl create
// namespace|configmap|secret|serviceaccount`) encode with protobuf, not JSON, and
// kube-apiserver accepts both. The envelope is "k8s\0" then a runtime.Unknown whose raw bytes
// are the object (k8s.io/api/core/v1/generated.proto). Decoded to the JSON kube-apiserver would
// have received from a JSON client: empty strings, zero numbers and unset times left out
// (omitempty), bytes as base64.
//
// Threads: pure functions.

#include <string_view>

#include <nlohmann/json.hpp>

namespace mka::sandbox {

// True when `body` starts with the protobuf envelope's magic "k8s\0".
bool isKubernetesProtobuf(std::string_view body);

// v1 Namespace, ConfigMap, Secret, ServiceAccount and DeleteOptions. Throws ApiError 415
// naming the kind for anything else (send it as JSON), and 400 for a body that is not a valid
// envelope or message (saying at which byte).
nlohmann::json decodeKubernetesProtobuf(std::string_view body);

}  // namespace mka::sandbox
