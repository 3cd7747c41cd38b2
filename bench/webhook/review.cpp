#include "review.h"

#include <nlohmann/json.hpp>

namespace mka::bench {

std::string minifyJson(const std::string& text) { return nlohmann::ordered_json::parse(text).dump(); }

std::string embeddedPipelineRunReview() {
  // Shaped after what Pipelines-as-Code creates for a pull request: generateName, labels and
  // managedFields set by the controller, inline parameters, workspaces and a pod template.
  static const char* const review = R"json({
  "kind": "AdmissionReview",
  "apiVersion": "admission.k8s.io/v1",
  "request": {
    "uid": "3f9c2b7e-8d41-4c6a-9b1e-5a7d2e0c4f18",
    "kind": {"group": "tekton.dev", "version": "v1", "kind": "PipelineRun"},
    "resource": {"group": "tekton.dev", "version": "v1", "resource": "pipelineruns"},
    "requestKind": {"group": "tekton.dev", "version": "v1", "kind": "PipelineRun"},
    "requestResource": {"group": "tekton.dev", "version": "v1", "resource": "pipelineruns"},
    "name": "build-and-test-x7k2q",
    "namespace": "team-a-ci",
    "operation": "CREATE",
    "userInfo": {
      "username": "system:serviceaccount:team-a-ci:pipelines-as-code",
      "uid": "b1d8e6f2-3c47-4a90-8e15-7f2c9d04a6b3",
      "groups": ["system:serviceaccounts", "system:serviceaccounts:team-a-ci", "system:authenticated"]
    },
    "object": {
      "apiVersion": "tekton.dev/v1",
      "kind": "PipelineRun",
      "metadata": {
        "name": "build-and-test-x7k2q",
        "generateName": "build-and-test-",
        "namespace": "team-a-ci",
        "creationTimestamp": null,
        "labels": {
          "app.kubernetes.io/managed-by": "pipelinesascode.tekton.dev",
          "kueue.x-k8s.io/queue-name": "team-a",
          "pipelinesascode.tekton.dev/event-type": "pull_request",
          "pipelinesascode.tekton.dev/repository": "payments-service",
          "tekton.dev/pipeline": "build-and-test"
        },
        "annotations": {"pipelinesascode.tekton.dev/sha": "9f1c3e7a2b6d4f8e0a5c1b3d7e9f2a4c6b8d0e1f"},
        "managedFields": [{
          "manager": "pipelines-as-code-controller",
          "operation": "Update",
          "apiVersion": "tekton.dev/v1",
          "time": "2025-11-22T10:15:42Z",
          "fieldsType": "FieldsV1",
          "fieldsV1": {
            "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:kueue.x-k8s.io/queue-name": {}}},
            "f:spec": {".": {}, "f:params": {}, "f:pipelineRef": {}, "f:workspaces": {}}
          }
        }]
      },
      "spec": {
        "pipelineRef": {"name": "build-and-test"},
        "params": [
          {"name": "repo-url", "value": "https://git.example.com/example/payments-service.git"},
          {"name": "revision", "value": "9f1c3e7a2b6d4f8e0a5c1b3d7e9f2a4c6b8d0e1f"},
          {"name": "image", "value": "registry.example.com/team-a/payments-service:pr-1287"},
          {"name": "test-flags", "value": ["-race", "-count=1", "-timeout=20m"]}
        ],
        "taskRunTemplate": {
          "serviceAccountName": "pipeline-runner",
          "podTemplate": {"securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "fsGroup": 65532}}
        },
        "timeouts": {"pipeline": "1h0m0s", "tasks": "50m0s", "finally": "10m0s"},
        "workspaces": [
          {"name": "source", "volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"],
                                                              "resources": {"requests": {"storage": "2Gi"}}}}},
          {"name": "git-credentials", "secret": {"secretName": "git-basic-auth"}},
          {"name": "docker-config", "secret": {"secretName": "registry-push"}}
        ]
      },
      "status": {}
    },
    "oldObject": null,
    "dryRun": false,
    "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "pipelines-as-code-controller"}
  }
})json";
  return minifyJson(review);
}

}  // namespace mka::bench
