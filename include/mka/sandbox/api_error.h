#pragma once
// Errors of the API emulator, rendered as metav1.Status exactly as kube-apiserver words them
// (kubectl prints them and clients branch on reason and code).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/errors.h"

namespace mka::sandbox {

class ApiError : public Error {
 public:
  ApiError(int code, std::string reason, std::string message, nlohmann::json details = nullptr);

  int code() const noexcept { return code_; }
  const std::string& reason() const noexcept { return reason_; }
  const nlohmann::json& details() const noexcept { return details_; }
  // {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":...,
  //  "reason":...,"details":...,"code":...}
  nlohmann::json status() const;
  // Status.metadata (a ListMeta): kube-apiserver puts a fresh continue token there when the
  // one a list sent has expired.
  const nlohmann::json& metadata() const noexcept { return metadata_; }
  ApiError withMetadata(nlohmann::json metadata) const;

  // `resource` is "<plural>.<group>" ("configmaps" for the core group), as kube-apiserver
  // writes it: `pipelineruns.tekton.dev "build-1" not found`.
  static ApiError notFound(const std::string& resource, const std::string& name);
  static ApiError alreadyExists(const std::string& resource, const std::string& name);
  static ApiError conflict(const std::string& resource, const std::string& name, const std::string& why);
  // 422. `kind` is "<Kind>.<group>" (e.g. "PipelineRun.tekton.dev"); causes are field errors.
  static ApiError invalid(const std::string& kind, const std::string& name, const FieldErrors& causes);
  static ApiError badRequest(const std::string& message);
  static ApiError gone(const std::string& message);  // 410 Expired, e.g. watch too old
  static ApiError methodNotSupported(const std::string& resource, const std::string& verb);
  static ApiError unauthorized();
  static ApiError forbidden(const std::string& message);
  static ApiError internal(const std::string& message);
  static ApiError unsupportedMediaType(const std::string& contentType);
  // 415 for a PATCH whose Content-Type is not among `accepted` (CRDs take no strategic merge).
  static ApiError unsupportedMediaType(const std::string& contentType, const std::vector<std::string>& accepted);
  // 422 Invalid "the server rejected our request due to an error in our request", the
  // generic answer for a JSON patch that cannot apply; `cause` says why (details.causes, with
  // reason UnexpectedServerResponse) and `field`, when set, where (e.g. the patch op "[2]").
  static ApiError unprocessable(const std::string& cause, const std::string& field = "");
  // 406 NotAcceptable: the Accept header asked for a rendering this answer cannot take.
  static ApiError notAcceptable(const std::string& message);

 private:
  int code_;
  std::string reason_;
  nlohmann::json details_;
  nlohmann::json metadata_ = nlohmann::json::object();
};

}  // namespace mka::sandbox
