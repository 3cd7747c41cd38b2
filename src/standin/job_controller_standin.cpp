#include "mka/standin/job_controller_standin.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"

namespace mka::standin {
namespace {

using nlohmann::json;

bool finishedRun(const json& job) {
  const auto status = job.find("status");
  if (status == job.end() || !status->is_object()) return false;
  for (const auto& c : status->value("conditions", json::array()))
    if (c.value("type", "") == "Succeeded" && c.value("status", "") != "Unknown") return true;
  return false;
}

std::string keyOf(const json& job) {
  return job["metadata"].value("namespace", "") + "/" + job["metadata"].value("name", "");
}

}  // namespace

struct JobControllerStandIn::Impl {
  Impl(sandbox::ClusterApi& api, const Clock& clock, Options options)
      : api(api), clock(clock), options(std::move(options)) {}

  sandbox::ClusterApi& api;
  const Clock& clock;
  Options options;

  mutable std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::map<std::string, Clock::TimePoint> runningSince;  // key -> when its replicas started
  std::map<std::string, int> starts;
  std::thread thread;

  sandbox::ResourceRef ref(const std::string& ns = "", const std::string& name = "") const {
    return {options.group, options.version, options.plural, ns, name, ""};
  }

  void writeStatus(const json& job, const json& status) {
    json next = job;
    next["status"] = status;
    auto at = ref(job["metadata"].value("namespace", ""), job["metadata"].value("name", ""));
    at.subresource = "status";
    try {
      api.update(at, next);
    } catch (const sandbox::ApiError& e) {
      if (e.code() != 409 && e.code() != 404) throw;  // the next pass reads it again
    }
  }

  void pass() {
    const json list = api.list(ref(), {});
    for (const auto& job : list.value("items", json::array())) {
      if (finishedRun(job) || job["metadata"].contains("deletionTimestamp")) continue;
      const std::string key = keyOf(job);
      const bool suspended = job["spec"].value("suspend", false);
      json status = job.value("status", json::object());
      std::unique_lock lock(mutex);
      const auto since = runningSince.find(key);
      if (suspended) {
        const bool hadReplicas = status.value("activeReplicas", 0) > 0;
        if (since != runningSince.end()) runningSince.erase(since);
        lock.unlock();
        if (hadReplicas) {
          status["activeReplicas"] = 0;
          writeStatus(job, status);
        }
        continue;
      }
      if (since == runningSince.end()) {
        runningSince[key] = clock.now();
        ++starts[key];
        lock.unlock();
        const auto replicas = job["spec"].value("replicas", json(1));
        status["activeReplicas"] = replicas.is_number_integer() ? replicas.get<int>() : 1;
        writeStatus(job, status);
        continue;
      }
      if (clock.now() - since->second < options.runTime) continue;
      runningSince.erase(since);
      lock.unlock();
      const bool failed = options.runFails && options.runFails(job);
      status["activeReplicas"] = 0;
      status["conditions"] =
          json::array({{{"type", "Succeeded"},
                        {"status", failed ? "False" : "True"},
                        {"reason", failed ? "Failed" : "Completed"},
                        {"message", failed ? "the training run failed" : "the training run completed"},
                        {"lastTransitionTime", toRfc3339(clock.now())}}});
      writeStatus(job, status);
    }
  }
};

JobControllerStandIn::JobControllerStandIn(sandbox::ClusterApi& api, const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(api, clock, std::move(options))) {}

JobControllerStandIn::~JobControllerStandIn() { stop(); }

void JobControllerStandIn::start() {
  if (impl_->thread.joinable()) return;
  impl_->thread = std::thread([impl = impl_.get()] {
    while (true) {
      try {
        impl->pass();
      } catch (const std::exception& e) {
        // The CRD may not exist yet; the next pass looks again.
        spdlog::debug("job controller stand-in pass failed error=\"{}\"", e.what());
      }
      std::unique_lock lock(impl->mutex);
      if (impl->wake.wait_for(lock, impl->options.pollInterval, [impl] { return impl->stopping; })) return;
    }
  });
}

void JobControllerStandIn::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int JobControllerStandIn::starts(const std::string& key) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->starts.find(key);
  return it == impl_->starts.end() ? 0 : it->second;
}

std::size_t JobControllerStandIn::running() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->runningSince.size();
}

}  // namespace mka::standin
