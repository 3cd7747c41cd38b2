#include "mka/kube/leader_election.h"
#include "mka/common/log.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <random>

namespace mka::kube {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

const api::GroupVersionKind kLease{"coordination.k8s.io", "v1", "Lease"};

// metav1.MicroTime: RFC 3339 with microseconds.
std::string microTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1'000'000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[40];
  const auto n = std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buffer + n, sizeof buffer - n, ".%06lldZ", static_cast<long long>(micros));
  return buffer;
}

int wholeSeconds(std::chrono::milliseconds d) {
  return static_cast<int>(std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d).count()));
}

// The elector's own connection: no client-side rate limit (a busy controller sharing the
// process's limiter must not hold a renewal back), no retries inside one attempt (the elector
// tries again every retryPeriod itself; a 503 retried with backoff would outlast the renew
// deadline) and no request outlasting the renew deadline.
ClientOptions electionClientOptions(const ClientOptions& shared, const LeaderElectionConfig& config) {
  auto options = shared;
  options.qps = 0;
  options.maxRetries = 0;
  options.timeout = std::min(shared.timeout, config.renewDeadline);
  return options;
}

}  // namespace

ClientOptions LeaderElector::renewalOptions(std::chrono::milliseconds timeout) {
  auto options = client_.rest().options();
  options.timeout = std::max(timeout, std::chrono::milliseconds{1});
  return options;
}

std::string defaultLeaderIdentity() {
  std::string name;
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') {
    name = pod;
  } else {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    name = host;
  }
  std::mt19937_64 rng{std::random_device{}()};
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string suffix;
  for (int i = 0; i < 8; ++i) suffix += kAlphabet[rng() % kAlphabet.size()];
  return name + "_" + suffix;
}

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig config)
    : client_(
          std::make_shared<RestClient>(client.rest().config(), electionClientOptions(client.rest().options(), config))),
      config_(std::move(config)) {
  if (config_.name.empty() || config_.namespace_.empty())
    throw Error(
        "leader election: the Lease needs a namespace and a name (leaderElection.resourceNamespace/resourceName)");
  if (config_.identity.empty()) config_.identity = defaultLeaderIdentity();
  if (config_.leaseDuration <= config_.renewDeadline)
    throw Error("leader election: leaseDuration must be greater than renewDeadline");
  if (config_.renewDeadline.count() <= config_.retryPeriod.count() * 12 / 10)
    throw Error("leader election: renewDeadline must be greater than retryPeriod*1.2");
}

LeaderElector::~LeaderElector() { stop(); }

std::string LeaderElector::leader() const {
  std::lock_guard lock(mutex_);
  return observedHolder_;
}

void LeaderElector::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void LeaderElector::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool LeaderElector::waitFor(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, delay, [&] { return stopping_; });
}

void LeaderElector::run() {
  log::info("leader election starts", {{"lease", leaseKey()}, {"identity", config_.identity}});
  // A leader that could not renew stands again: the API server may answer again before anyone
  // else takes over, and a lone replica would otherwise never lead again.
  while (true) {
    // Each renewal counts from before its request: the write came after it, so no other
    // candidate, counting from when it saw the write, ever counts from an earlier time.
    auto lastRenew = SteadyClock::now();
    // Acquire: retry every retryPeriod until we hold the lease.
    while (!tryAcquireOrRenew(client_)) {
      if (!waitFor(config_.retryPeriod)) return;
      lastRenew = SteadyClock::now();
    }
    leading_ = true;
    log::info("leader election acquired", {{"lease", leaseKey()}, {"identity", config_.identity}});
    if (config_.onStartedLeading) config_.onStartedLeading();
    // Renew: every retryPeriod; leadership ends when renewDeadline passes without a renewal.
    bool lost = false;
    while (!lost) {
      // Leadership ends at the renew deadline whatever the API server does: the wait stops at
      // it, and an attempt (a read and a write) gets half of what is left per request, so a
      // leader whose requests hang steps down on time, as client-go's renew context makes it.
      const auto deadline = lastRenew + config_.renewDeadline;
      const auto untilDeadline = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
      if (!waitFor(std::clamp(untilDeadline, std::chrono::milliseconds::zero(), config_.retryPeriod))) break;
      const auto attempt = SteadyClock::now();
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - attempt);
      if (left > std::chrono::milliseconds::zero()) {
        Client renewal(std::make_shared<RestClient>(client_.rest().config(), renewalOptions(left / 2)));
        if (tryAcquireOrRenew(renewal)) {
          lastRenew = attempt;
          continue;
        }
      }
      if (SteadyClock::now() >= deadline) {
        log::error("leader election lost: no renewal within the renew deadline",
                   {{"lease", leaseKey()}, {"identity", config_.identity}});
        lost = true;
      }
    }
    if (!lost && config_.releaseOnCancel) release();
    leading_ = false;
    if (config_.onStoppedLeading) config_.onStoppedLeading();
    if (!lost || !waitFor(config_.retryPeriod)) return;
  }
}

bool LeaderElector::tryAcquireOrRenew(Client& client) {
  json lease;
  try {
    lease = client.get(kLease, config_.namespace_, config_.name);
  } catch (const ApiError& e) {
    if (e.reason() != Reason::NotFound) {
      log::warn("leader election cannot read the lease", {{"lease", leaseKey()}, {"error", e.what()}});
      return false;
    }
    const auto t = microTimeNow();
    json fresh = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.name}, {"namespace", config_.namespace_}}},
                  {"spec",
                   {{"holderIdentity", config_.identity},
                    {"leaseDurationSeconds", wholeSeconds(config_.leaseDuration)},
                    {"acquireTime", t},
                    {"renewTime", t},
                    {"leaseTransitions", 0}}}};
    try {
      client.create(fresh);
    } catch (const ApiError& createError) {
      log::info("leader election lost the race to create the lease",
                {{"lease", leaseKey()}, {"error", createError.what()}});
      return false;
    }
    std::lock_guard lock(mutex_);
    observedHolder_ = config_.identity;
    observedSpec_ = fresh["spec"];
    observedAt_ = SteadyClock::now();
    return true;
  }
  // Observed when the answer arrived, as client-go does: never earlier than the holder's write,
  // so a lease is never judged expired before leaseDuration has passed since that write.
  const auto now = SteadyClock::now();

  const auto spec = lease.value("spec", json::object());
  const auto holder = spec.value("holderIdentity", "");
  std::string announce;
  {
    std::lock_guard lock(mutex_);
    if (spec != observedSpec_) {
      observedSpec_ = spec;
      observedAt_ = now;
      if (holder != observedHolder_) announce = holder;
      observedHolder_ = holder;
    }
  }
  if (!announce.empty() && config_.onNewLeader) config_.onNewLeader(announce);
  const auto duration = std::chrono::seconds{spec.value("leaseDurationSeconds", wholeSeconds(config_.leaseDuration))};
  bool expired;
  {
    std::lock_guard lock(mutex_);
    expired = observedAt_ + duration <= now;
  }
  if (!holder.empty() && holder != config_.identity && !expired) return false;

  const auto t = microTimeNow();
  json next = lease;
  auto& s = next["spec"];
  if (holder != config_.identity) {
    s["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
    s["acquireTime"] = t;
  }
  s["holderIdentity"] = config_.identity;
  s["leaseDurationSeconds"] = wholeSeconds(config_.leaseDuration);
  s["renewTime"] = t;
  try {
    auto stored = client.update(next);  // conditioned on the resourceVersion we read
    std::lock_guard lock(mutex_);
    observedSpec_ = stored.value("spec", json::object());
    observedHolder_ = config_.identity;
    observedAt_ = now;
    return true;
  } catch (const ApiError& e) {
    log::info("leader election could not write the lease", {{"lease", leaseKey()}, {"error", e.what()}});
    return false;
  }
}

void LeaderElector::release() {
  try {
    auto lease = client_.get(kLease, config_.namespace_, config_.name);
    if (lease.value("spec", json::object()).value("holderIdentity", "") != config_.identity) return;
    const auto t = microTimeNow();
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    lease["spec"]["renewTime"] = t;
    lease["spec"]["acquireTime"] = t;
    client_.update(lease);
    log::info("leader election released", {{"lease", leaseKey()}, {"identity", config_.identity}});
  } catch (const std::exception& e) {
    log::warn("leader election could not release the lease", {{"lease", leaseKey()}, {"error", e.what()}});
  }
}

}  // namespace mka::kube
