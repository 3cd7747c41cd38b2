#include "token_controller.h"

#include <map>
#include <mutex>
#include <variant>

#include "ids.h"
#include "log.h"
#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/common/json_fields.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "task_loop.h"

namespace mka::sandbox {
namespace token_controller {

using nlohmann::json;

// How soon a task that met a conflict or an error is tried again (kube-controller-manager
// requeues with a backoff; tests await idle()).
constexpr std::chrono::milliseconds kRetry{20};

struct FillSecret {
  std::string namespace_, name;
};
struct ServiceAccountGone {
  std::string namespace_, name, uid;
};
using Task = std::variant<FillSecret, ServiceAccountGone>;

// Where a token came from, to check on every request that it still holds.
struct Issued {
  std::string namespace_, secret;
};

using json_fields::metadataString;

std::string annotation(const json& object, std::string_view key) {
  const auto* annotations = object.contains("metadata") ? &object["metadata"] : nullptr;
  if (annotations == nullptr || !annotations->is_object() || !annotations->contains("annotations")) return "";
  const auto& map = (*annotations)["annotations"];
  if (!map.is_object()) return "";
  const auto it = map.find(std::string(key));
  return it != map.end() && it->is_string() ? it->get<std::string>() : "";
}

bool isTokenSecret(const json& secret) {
  const auto type = secret.find("type");
  return type != secret.end() && type->is_string() && type->get<std::string>() == kServiceAccountTokenType;
}

// data[key], base64-decoded; "" when absent or not base64.
std::string dataValue(const json& secret, const char* key) {
  const auto data = secret.find("data");
  if (data == secret.end() || !data->is_object()) return "";
  const auto value = data->find(key);
  if (value == data->end() || !value->is_string()) return "";
  return base64Decode(value->get<std::string>()).value_or("");
}

bool beingDeleted(const json& object) {
  const auto meta = object.find("metadata");
  return meta != object.end() && meta->is_object() && meta->contains("deletionTimestamp") &&
         !(*meta)["deletionTimestamp"].is_null();
}

ResourceRef secretRef(const std::string& ns, const std::string& name) { return {"", "v1", "secrets", ns, name, ""}; }

// Everything TokenController does, in this namespace so that its helpers stay out of the other
// files of a unity build.
struct Controller {
  Controller(ClusterApi& a, std::string ca)
      : api(a),
        caPem(std::move(ca)),
        loop(
            "tokens-" + a.clusterName(), kRetry,
            [this](const Task& task) { return std::visit([&](const auto& t) { return handle(t); }, task); },
            [this](const std::exception& e) {
              log::warn(logger(), "sandbox token controller retries",
                        {{"cluster", api.clusterName()}, {"error", e.what()}});
            }) {}

  ClusterApi& api;
  const std::string caPem;
  mutable std::mutex mutex;
  std::map<std::string, Issued> issued;  // under mutex; token -> its Secret
  detail::TaskLoop<Task> loop;           // last: its thread stops before the members it uses go

  // kube-controller-manager's syncSecret: fills a token Secret of an existing ServiceAccount,
  // deletes one whose ServiceAccount is gone. Returns true to be tried again.
  bool handle(const FillSecret& task) {
    const auto ref = secretRef(task.namespace_, task.name);
    json secret;
    try {
      secret = api.get(ref);
    } catch (const ApiError& e) {
      if (e.code() == 404) return false;
      throw;
    }
    if (!isTokenSecret(secret) || beingDeleted(secret) || !dataValue(secret, "token").empty()) return false;
    const auto account = annotation(secret, kServiceAccountNameAnnotation);
    const auto wantedUid = annotation(secret, kServiceAccountUidAnnotation);
    std::optional<json> serviceAccount;
    if (!account.empty()) {
      try {
        serviceAccount = api.get({"", "v1", "serviceaccounts", task.namespace_, account, ""});
      } catch (const ApiError& e) {
        if (e.code() != 404) throw;
      }
    }
    if (!serviceAccount || (!wantedUid.empty() && metadataString(*serviceAccount, "uid") != wantedUid)) {
      log::info(
          logger(), "sandbox token controller deletes a token Secret without its ServiceAccount",
          {{"cluster", api.clusterName()}, {"secret", task.namespace_ + "/" + task.name}, {"serviceAccount", account}});
      try {
        api.remove(ref, DeleteOptions{.preconditionUid = metadataString(secret, "uid")});
      } catch (const ApiError& e) {
        if (e.code() != 404 && e.code() != 409) throw;
      }
      return false;
    }
    const auto token = detail::newToken("a ServiceAccount token");
    secret["metadata"]["annotations"][std::string(kServiceAccountUidAnnotation)] =
        metadataString(*serviceAccount, "uid");
    auto& data = secret["data"];
    if (!data.is_object()) data = json::object();
    data["token"] = base64Encode(token);
    data["ca.crt"] = base64Encode(caPem);
    data["namespace"] = base64Encode(task.namespace_);
    {
      // Known before the Secret shows it, so that a client never reads a token that is refused.
      std::lock_guard lock(mutex);
      issued[token] = {task.namespace_, task.name};
    }
    try {
      api.update(ref, std::move(secret), WriteOptions{.fieldManager = "kube-controller-manager"});
    } catch (const ApiError& e) {
      std::lock_guard lock(mutex);
      issued.erase(token);
      if (e.code() == 409) return true;  // written meanwhile: read it again
      if (e.code() == 404) return false;
      throw;
    }
    log::info(
        logger(), "sandbox token controller filled a ServiceAccount token Secret",
        {{"cluster", api.clusterName()}, {"secret", task.namespace_ + "/" + task.name}, {"serviceAccount", account}});
    return false;
  }

  // kube-controller-manager deletes the token Secrets of a deleted ServiceAccount.
  bool handle(const ServiceAccountGone& task) {
    const auto secrets = api.list({"", "v1", "secrets", task.namespace_, "", ""}, {});
    for (const auto& secret : secrets.value("items", json::array())) {
      if (!isTokenSecret(secret) || annotation(secret, kServiceAccountNameAnnotation) != task.name) continue;
      const auto uid = annotation(secret, kServiceAccountUidAnnotation);
      if (!uid.empty() && uid != task.uid) continue;
      try {
        api.remove(secretRef(task.namespace_, metadataString(secret, "name")));
      } catch (const ApiError& e) {
        if (e.code() != 404) throw;
      }
    }
    return false;
  }

  void start() {
    if (!loop.start()) return;
    // Secrets written while it was stopped.
    for (const auto& [key, object] : api.store().snapshot())
      if (key.group.empty() && key.plural == "secrets" && isTokenSecret(object) && dataValue(object, "token").empty())
        loop.push(FillSecret{key.namespace_, key.name});
  }

  void stop() { loop.stop(); }

  void observe(const ResourceType& type, const json& object, bool removed) {
    if (!type.group.empty()) return;
    if (type.plural == "secrets") {
      if (!isTokenSecret(object)) return;
      if (removed) {
        const auto token = dataValue(object, "token");
        std::lock_guard lock(mutex);
        issued.erase(token);
      } else if (dataValue(object, "token").empty()) {
        loop.push(FillSecret{metadataString(object, "namespace"), metadataString(object, "name")});
      }
    } else if (type.plural == "serviceaccounts" && removed) {
      loop.push(ServiceAccountGone{metadataString(object, "namespace"), metadataString(object, "name"),
                                   metadataString(object, "uid")});
    }
  }

  std::optional<std::string> authenticate(const std::string& token) const {
    Issued where;
    {
      std::lock_guard lock(mutex);
      const auto it = issued.find(token);
      if (it == issued.end()) return std::nullopt;
      where = it->second;
    }
    // kube-apiserver's legacy token authenticator: the Secret still holds the token, the
    // ServiceAccount it names exists with the uid it names, neither is being deleted.
    auto& store = api.store();
    const auto secret = store.get({"", "secrets", where.namespace_, where.secret});
    if (!secret || beingDeleted(*secret) || dataValue(*secret, "token") != token) return std::nullopt;
    const auto account = annotation(*secret, kServiceAccountNameAnnotation);
    const auto serviceAccount = store.get({"", "serviceaccounts", where.namespace_, account});
    if (!serviceAccount || beingDeleted(*serviceAccount) ||
        metadataString(*serviceAccount, "uid") != annotation(*secret, kServiceAccountUidAnnotation))
      return std::nullopt;
    return "system:serviceaccount:" + where.namespace_ + ":" + account;
  }

  bool idle() const { return loop.idle(); }
};

}  // namespace token_controller

struct TokenController::Impl : token_controller::Controller {
  using Controller::Controller;
};

TokenController::TokenController(ClusterApi& api, std::string caPem)
    : impl_(std::make_unique<Impl>(api, std::move(caPem))) {}

TokenController::~TokenController() { stop(); }

void TokenController::start() { impl_->start(); }
void TokenController::stop() { impl_->stop(); }

void TokenController::observe(const ResourceType& type, const nlohmann::json& object, bool removed) {
  impl_->observe(type, object, removed);
}

std::optional<std::string> TokenController::authenticate(const std::string& token) const {
  return impl_->authenticate(token);
}

bool TokenController::idle() const { return impl_->idle(); }

}  // namespace mka::sandbox
