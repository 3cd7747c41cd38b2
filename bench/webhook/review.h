#pragma once
// The request body the benchmark sends: a realistic AdmissionReview for the CREATE of a queued
// Tekton v1 PipelineRun, as kube-apiserver sends it (compact JSON, about 2.5 KB).

#include <string>

namespace mka::bench {

// The embedded review, minified (2,583 bytes). It carries the kueue.x-k8s.io/queue-name label
// and no spec.managedBy, so /mutate answers with a JSONPatch.
std::string embeddedPipelineRunReview();

// `text` re-serialised as compact JSON with the key order kept. Throws on invalid JSON.
std::string minifyJson(const std::string& text);

}  // namespace mka::bench
