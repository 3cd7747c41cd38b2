#pragma once
// The continue token of a paginated list, as kube-apiserver shapes it: base64url (no padding)
// of {"v":"meta.k8s.io/v1","rv":<revision of the first page>,"start":"<namespace>/<name>"}.
// Clients treat it as opaque; the store needs the revision (to answer every page from the same
// snapshot) and the last key returned (to resume after it).

#include <cstdint>
#include <string>

namespace mka::sandbox {

struct ContinueToken {
  // -1: continue at the latest revision (the "inconsistent" token of an expired 410).
  std::int64_t resourceVersion = 0;
  std::string namespace_;  // of the last item returned
  std::string name;
};

std::string encodeContinue(const ContinueToken& token);
// Throws ApiError 400 "invalid continue token: ..." when `text` is not one of ours.
ContinueToken decodeContinue(const std::string& text);

}  // namespace mka::sandbox
