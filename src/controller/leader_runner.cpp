#include "mka/controller/leader_runner.h"

#include <algorithm>

#include "mka/common/log.h"
#include "mka/common/thread_cache.h"
#include "mka/common/thread_name.h"

namespace mka::controller {

LeaderRunner::LeaderRunner(kube::Client& client, Options options)
    : client_(client),
      options_(std::move(options)),
      stops_(options_.groups.size()),
      idle_(options_.groups.size(), false) {}

LeaderRunner::~LeaderRunner() { stop(); }

void LeaderRunner::start() {
  if (thread_.joinable() || stopped_) return;
  if (options_.election) {
    auto le = *options_.election;
    le.onStartedLeading = [this] { post({Message::Type::Lead, {}}); };
    le.onStoppedLeading = [this] { loseLeadership(); };
    le.onNewLeader = [](const std::string& identity) { log::info("leader observed", {{"identity", identity}}); };
    elector_ = std::make_unique<kube::LeaderElector>(client_, le);  // throws on bad durations
  }
  thread_ = std::thread([this] {
    nameThisThread("leader");
    disableThreadCache();  // a few messages per leadership change
    run();
  });
  if (!elector_) {
    post({Message::Type::Lead, {}});
    return;
  }
  log::info("leader election started", {{"lease", options_.election->namespace_ + "/" + options_.election->name},
                                        {"identity", options_.election->identity}});
  elector_->start();
}

void LeaderRunner::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_.request_stop();
    term_.request_stop();  // a group's start waiting for caches gives up
  }
  if (elector_) elector_->stop();  // may post Follow
  post({Message::Type::Stop, {}});
  if (thread_.joinable()) thread_.join();
  elector_.reset();
  stopped_ = true;
}

void LeaderRunner::restartIf(std::function<bool()> changed) { post({Message::Type::Restart, std::move(changed)}); }

bool LeaderRunner::leading() const {
  std::lock_guard lock(mutex_);
  return leading_;
}

bool LeaderRunner::running(const std::string& group) const {
  std::lock_guard lock(mutex_);
  return running_.count(group) != 0;
}

// On the elector's thread. A group's start in progress gives up at once: the groups must not
// run, even for a moment, once another replica may lead. The Follow is queued under the same
// lock, so a Lead being handled either sees it queued or gets a term that this stops.
void LeaderRunner::loseLeadership() {
  {
    std::lock_guard lock(mutex_);
    term_.request_stop();
    messages_.push_back({Message::Type::Follow, {}});
  }
  wake_.notify_all();
}

void LeaderRunner::post(Message message) {
  {
    std::lock_guard lock(mutex_);
    messages_.push_back(std::move(message));
  }
  wake_.notify_all();
}

bool LeaderRunner::anyWanted() const {
  for (std::size_t i = 0; i < stops_.size(); ++i)
    if (!stops_[i] && !idle_[i]) return true;
  return false;
}

void LeaderRunner::run() {
  while (true) {
    Message message;
    {
      std::unique_lock lock(mutex_);
      const bool retry = leading_ && anyWanted();
      if (!wake_.wait_for(lock, retry ? options_.retryInterval : std::chrono::milliseconds{std::chrono::hours{24}},
                          [&] { return !messages_.empty(); })) {
        if (retry) {
          lock.unlock();
          startGroups();
        }
        continue;
      }
      message = std::move(messages_.front());
      messages_.pop_front();
      if (message.type == Message::Type::Lead) {
        leading_ = true;
        // A new term, unless the leadership was lost again before this was handled (its Follow
        // is queued behind): then the term stays stopped and nothing starts.
        const bool lostAgain = std::any_of(messages_.begin(), messages_.end(), [](const Message& m) {
          return m.type == Message::Type::Follow || m.type == Message::Type::Stop;
        });
        if (term_.stop_requested() && !stopping_.stop_requested() && !lostAgain) term_ = std::stop_source{};
      }
      if (message.type == Message::Type::Follow || message.type == Message::Type::Stop) leading_ = false;
    }
    switch (message.type) {
      case Message::Type::Lead:
        if (elector_ && options_.onLeading) options_.onLeading(true);
        startGroups();
        break;
      case Message::Type::Follow:
        if (options_.onLeading) options_.onLeading(false);
        log::info("leadership lost: the leader's controllers stop");
        stopGroups();
        break;
      case Message::Type::Restart:
        if (prepared_ && message.changed && message.changed()) {
          log::info("settings changed: restarting the leader's controllers with the new configuration");
          stopGroups();
          startGroups();
        }
        break;
      case Message::Type::Stop: stopGroups(); return;
    }
  }
}

void LeaderRunner::startGroups() {
  std::stop_token term;
  {
    std::lock_guard lock(mutex_);
    term = term_.get_token();
  }
  if (term.stop_requested()) return;
  if (!prepared_) {
    if (options_.beforeStart) options_.beforeStart();
    prepared_ = true;
  }
  for (std::size_t i = 0; i < options_.groups.size(); ++i) {
    if (stops_[i] || idle_[i]) continue;
    if (term.stop_requested()) return;
    const auto& group = options_.groups[i];
    try {
      auto stop = group.start(term);
      if (!stop) {
        idle_[i] = true;
        continue;
      }
      stops_[i] = std::move(stop);
      std::lock_guard lock(mutex_);
      running_.insert(group.name);
    } catch (const std::exception& e) {
      if (term.stop_requested()) {
        log::info(group.name + " not started: the replica is stopping or lost the leadership", {{"error", e.what()}});
        return;
      }
      // The caches cannot sync (CRDs missing, RBAC): stay up for the webhooks, say why, retry.
      log::error(group.name + " not started", {{"error", e.what()}});
    }
  }
}

void LeaderRunner::stopGroups() {
  for (std::size_t i = options_.groups.size(); i-- > 0;) {
    idle_[i] = false;
    if (!stops_[i]) continue;
    if (*stops_[i]) (*stops_[i])();
    stops_[i].reset();
    std::lock_guard lock(mutex_);
    running_.erase(options_.groups[i].name);
  }
  if (prepared_) {
    if (options_.afterStop) options_.afterStop();
    prepared_ = false;
  }
}

}  // namespace mka::controller
