#include "mka/webhook/queue_index_informers.h"
#include "mka/common/log.h"

namespace mka::webhook {
namespace {

using nlohmann::json;

std::string name(const json& o) { return o.value("metadata", json::object()).value("name", ""); }
std::string ns(const json& o) { return o.value("metadata", json::object()).value("namespace", ""); }
json spec(const json& o) { return o.value("spec", json::object()); }

}  // namespace

std::vector<std::string> clusterQueueAdmissionChecks(const json& clusterQueue) {
  std::vector<std::string> out;
  const auto s = spec(clusterQueue);
  for (const auto& check : s.value("admissionChecks", json::array()))
    if (check.is_string()) out.push_back(check.get<std::string>());
  const auto strategy = s.value("admissionChecksStrategy", json::object());
  for (const auto& rule : strategy.value("admissionChecks", json::array()))
    if (rule.is_object() && rule.contains("name")) out.push_back(rule.value("name", ""));
  return out;
}

QueueIndexInformers::QueueIndexInformers(kube::Client& client, InMemoryQueueIndex& index)
    : client_(client), index_(index) {}

QueueIndexInformers::~QueueIndexInformers() { stop(); }

void QueueIndexInformers::start() {
  std::lock_guard lock(mutex_);
  if (starter_.joinable()) return;
  stopping_ = false;
  stop_ = std::stop_source();
  starter_ = std::thread([this, stop = stop_.get_token()] {
    auto backoff = std::chrono::milliseconds{200};
    while (true) {
      try {
        // Kueue v1beta2 first; a cluster with an older Kueue serves v1beta1 only.
        std::string version = "v1beta2";
        try {
          client_.discovery().resourceFor({"kueue.x-k8s.io", version, "LocalQueue"}, stop);
        } catch (const kube::ApiError& e) {
          if (e.reason() != kube::Reason::NotFound) throw;
          version = "v1beta1";
          client_.discovery().resourceFor({"kueue.x-k8s.io", version, "LocalQueue"}, stop);
        }
        startInformers(version);
        return;
      } catch (const std::exception& e) {
        if (stop.stop_requested()) return;
        log::warn("queue index cannot start yet, retrying", {{"backoffMs", backoff.count()}, {"error", e.what()}});
      }
      std::unique_lock lock(mutex_);
      if (wake_.wait_for(lock, backoff, [&] { return stopping_; })) return;
      backoff = std::min(backoff * 2, std::chrono::milliseconds{std::chrono::seconds{30}});
    }
  });
}

void QueueIndexInformers::startInformers(const std::string& version) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  version_ = version;
  log::info("queue index watches Kueue", {{"version", version_}});
  // Queues and checks change rarely: the reflectors keep no allocator thread cache.
  const kube::InformerOptions options{.threadCache = false};
  localQueues_ = std::make_unique<kube::Informer>(
      client_, api::GroupVersionKind{"kueue.x-k8s.io", version_, "LocalQueue"}, options);
  localQueues_->addHandlers({
      .onAdd = [this](const json& o) { index_.upsertLocalQueue(ns(o), name(o), spec(o).value("clusterQueue", "")); },
      .onUpdateNew =
          [this](const json& o) { index_.upsertLocalQueue(ns(o), name(o), spec(o).value("clusterQueue", "")); },
      .onDelete = [this](const json& o) { index_.removeLocalQueue(ns(o), name(o)); },
  });
  clusterQueues_ = std::make_unique<kube::Informer>(
      client_, api::GroupVersionKind{"kueue.x-k8s.io", version_, "ClusterQueue"}, options);
  clusterQueues_->addHandlers({
      .onAdd = [this](const json& o) { index_.upsertClusterQueue(name(o), clusterQueueAdmissionChecks(o)); },
      .onUpdateNew = [this](const json& o) { index_.upsertClusterQueue(name(o), clusterQueueAdmissionChecks(o)); },
      .onDelete = [this](const json& o) { index_.removeClusterQueue(name(o)); },
  });
  admissionChecks_ = std::make_unique<kube::Informer>(
      client_, api::GroupVersionKind{"kueue.x-k8s.io", version_, "AdmissionCheck"}, options);
  admissionChecks_->addHandlers({
      .onAdd = [this](const json& o) { index_.upsertAdmissionCheck(name(o), spec(o).value("controllerName", "")); },
      .onUpdateNew =
          [this](const json& o) { index_.upsertAdmissionCheck(name(o), spec(o).value("controllerName", "")); },
      .onDelete = [this](const json& o) { index_.removeAdmissionCheck(name(o)); },
  });
  localQueues_->start();
  clusterQueues_->start();
  admissionChecks_->start();
}

void QueueIndexInformers::stop() {
  std::stop_source starter;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    starter = stop_;
  }
  starter.request_stop();
  wake_.notify_all();
  if (starter_.joinable()) starter_.join();
  for (auto* informer : {localQueues_.get(), clusterQueues_.get(), admissionChecks_.get()})
    if (informer) informer->stop();
}

std::string QueueIndexInformers::kueueVersion() const {
  std::lock_guard lock(mutex_);
  return version_;
}

bool QueueIndexInformers::hasSynced() const {
  std::lock_guard lock(mutex_);
  return localQueues_ && clusterQueues_ && admissionChecks_ && localQueues_->hasSynced() &&
         clusterQueues_->hasSynced() && admissionChecks_->hasSynced();
}

}  // namespace mka::webhook
