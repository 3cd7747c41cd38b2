#include "mka/controller/manager.h"

#include <algorithm>

#include "mka/common/errors.h"
#include "mka/common/log.h"

namespace mka::controller {

Manager::Manager(kube::Client& client, const Clock& clock, Options options)
    : client_(client), clock_(clock), options_(std::move(options)) {
  if (options_.informers == nullptr) ownInformers_ = std::make_unique<kube::InformerPool>(client_);
}

Manager::~Manager() { stop(); }

kube::Informer& Manager::informer(const api::GroupVersionKind& gvk, const kube::InformerOptions& options) {
  auto& pool = options_.informers != nullptr ? *options_.informers : *ownInformers_;
  auto& informer = pool.informer(gvk, options);
  if (std::find(informers_.begin(), informers_.end(), &informer) == informers_.end()) {
    informers_.push_back(&informer);
    reader_.add(informer);
  }
  return informer;
}

void Manager::handle(kube::Informer& informer, kube::InformerHandlers handlers) {
  handlers_.add(informer, std::move(handlers));
}

Controller& Manager::add(Controller::Options options, Controller::Reconcile reconcile) {
  if (options.observer == nullptr) options.observer = options_.observer;
  controllers_.push_back(std::make_unique<Controller>(std::move(options), std::move(reconcile), clock_));
  runnables_.push_back(Runnable{.controller = controllers_.back().get()});
  return *controllers_.back();
}

void Manager::add(std::function<void()> start, std::function<void()> stop) {
  runnables_.push_back(Runnable{.start = std::move(start), .stop = std::move(stop)});
}

void Manager::start(std::chrono::milliseconds syncTimeout, std::string_view hint, std::stop_token stopping) {
  if (started_ || stopped_) return;
  started_ = true;
  const auto missing = kube::startAndWaitForSync(informers_, syncTimeout, stopping);
  if (!missing.empty() && stopping.stop_requested())
    throw Error(options_.name + ": not started: stopping before the caches synced for: " + missing);
  if (!missing.empty())
    throw Error(options_.name + ": the caches did not sync within " + std::to_string(syncTimeout.count()) +
                " ms for: " + missing + "; " + std::string(hint));
  for (auto& r : runnables_) {
    if (r.controller != nullptr) {
      r.controller->start();
    } else if (r.start) {
      r.start();
    }
    ++running_;
  }
}

void Manager::stop() {
  if (stopped_) return;
  stopped_ = true;
  handlers_.clear();
  // Only what start() reached: after caches that did not sync, nothing was started.
  for (auto r = runnables_.rend() - static_cast<std::ptrdiff_t>(running_); r != runnables_.rend(); ++r) {
    if (r->controller != nullptr) {
      r->controller->stop();
    } else if (r->stop) {
      r->stop();
    }
  }
  running_ = 0;
  // Shared informers go on for the other groups; their owner stops them.
  if (ownInformers_) ownInformers_->stop();
}

bool Manager::idle() const {
  return std::all_of(controllers_.begin(), controllers_.end(), [](const auto& c) { return c->idle(); });
}

void Manager::recheckClock() {
  for (auto& c : controllers_) c->recheckClock();
}

}  // namespace mka::controller
