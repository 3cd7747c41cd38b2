// dispatch_bench: N jobs through the dispatch loop (see bench/README.md).
//
// As deployed with the job integration: the sandbox (a manager and workers, Kueue stand-ins
// playing Kueue's core only, Tekton and Argo controller stand-ins, each worker's integration)
// runs in this process; the adapter, which also runs the manager's integration (it creates the
// manager's Workloads), runs as its own process (`multikueue-adapter serve`, leader election
// on, client rate limits off), so its CPU time and peak RSS are its own. Timings come from
// in-process watches on the emulated clusters, which see every write as it is committed:
// - dispatch latency: a manager Workload's quota reservation -> the job copy created on a worker;
// - status-sync latency: a worker job's first status write -> that status on the manager's job.
// Prints figures; exits non-zero only when the setup fails or jobs never get through.

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "../common/process_stats.h"
#include "mka/api/workload_status.h"
#include "mka/common/thread_name.h"
#include "mka/demo/environment.h"
#include "mka/net/pki.h"
#include "mka/sandbox/object_store.h"

extern char** environ;

namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

// The job integration's CPU in one process, from its threads' names: its reconcilers
// ("job-<kind>-<i>") and their work queues ("wq-job-<kind>"), and the informers ("inf-<Kind>").
// In the adapter the informers also serve the dispatch loop; in this process only the workers'
// integrations run informers (the stand-ins and recorders watch the stores in-process).
struct IntegrationCpu {
  double reconcilers = 0;
  double informers = 0;
};

IntegrationCpu integrationCpu(const std::map<std::string, double>& byName,
                              const std::map<std::string, double>& before = {}) {
  IntegrationCpu cpu;
  for (const auto& [name, seconds] : byName) {
    const auto was = before.find(name);
    const double spent = seconds - (was == before.end() ? 0.0 : was->second);
    if (name.starts_with("job-") || name.starts_with("wq-job-")) cpu.reconcilers += spent;
    if (name.starts_with("inf-")) cpu.informers += spent;
  }
  return cpu;
}

// First time each object (by name) showed each of some properties, recorded by a thread
// following one in-process watch. (One watch for all the properties of a resource: the
// recorders run in the sandbox's process, on the CPUs the adapter is measured on.)
class Recorder {
 public:
  using Predicate = std::function<bool(const json& object)>;
  Recorder(mka::sandbox::Cluster& cluster, std::string group, std::string plural, std::vector<Predicate> predicates)
      : predicates_(std::move(predicates)), seen_(predicates_.size()), fresh_(predicates_.size()) {
    watch_ = cluster.store().watch(group, plural, "", 0, nullptr);
    thread_ = std::thread([this] {
      mka::nameThisThread("recorder");
      run();
    });
  }
  ~Recorder() {
    stop_ = true;
    watch_->close();
    thread_.join();
  }
  // When each object first showed property `i` (the index in the constructor's list).
  std::map<std::string, Steady::time_point> snapshot(std::size_t i = 0) {
    std::lock_guard lock(mutex_);
    return seen_.at(i);
  }
  std::size_t count(std::size_t i = 0) {
    std::lock_guard lock(mutex_);
    return seen_.at(i).size();
  }
  // The objects that first showed property `i` since the last call, in the order seen.
  std::vector<std::string> takeFresh(std::size_t i = 0) {
    std::lock_guard lock(mutex_);
    return std::exchange(fresh_.at(i), {});
  }
  bool lost() const { return lost_; }

 private:
  void run() {
    while (!stop_) {
      auto event = watch_->next(std::chrono::milliseconds{200});
      if (!event) {
        if (watch_->closed()) {
          if (!stop_) lost_ = true;
          return;
        }
        continue;
      }
      if (event->type == mka::sandbox::EventType::Error) {
        lost_ = true;
        return;
      }
      if (event->type == mka::sandbox::EventType::Deleted || event->type == mka::sandbox::EventType::Bookmark) continue;
      const auto& object = *event->object;
      const auto meta = object.find("metadata");
      if (meta == object.end() || !meta->is_object()) continue;
      const auto name = meta->value("name", "");
      const auto now = Steady::now();
      for (std::size_t i = 0; i < predicates_.size(); ++i) {
        if (!predicates_[i](object)) continue;
        std::lock_guard lock(mutex_);
        if (seen_[i].emplace(name, now).second) fresh_[i].push_back(name);
      }
    }
  }
  const std::vector<Predicate> predicates_;
  std::unique_ptr<mka::sandbox::ObjectStore::Watch> watch_;
  std::mutex mutex_;
  std::vector<std::map<std::string, Steady::time_point>> seen_;
  std::vector<std::vector<std::string>> fresh_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> lost_{false};
  std::thread thread_;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

// Tekton's end of a run: the Succeeded condition True or False.
bool runFinished(const json& job) {
  const auto status = job.find("status");
  if (status == job.end() || !status->is_object()) return false;
  for (const auto& c : status->value("conditions", json::array()))
    if (c.value("type", "") == "Succeeded") return c.value("status", "Unknown") != "Unknown";
  return false;
}

// The least-squares slope of y over x.
double slopeOf(const std::vector<std::pair<double, double>>& points) {
  const auto n = static_cast<double>(points.size());
  if (points.size() < 2) return 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double d = n * sxx - sx * sx;
  return d == 0 ? 0 : (n * sxy - sx * sy) / d;
}

// controller_runtime_reconcile_total of one controller, summed over its results; -1 when the
// adapter's /metrics cannot be read.
double reconcilesOf(int metricsPort, const std::string& controller) {
  httplib::Client client("127.0.0.1", metricsPort);
  auto res = client.Get("/metrics");
  if (!res || res->status != 200) return -1;
  double total = 0;
  std::istringstream lines(res->body);
  const std::string prefix = "controller_runtime_reconcile_total{";
  const std::string label = "controller=\"" + controller + "\"";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0 || line.find(label) == std::string::npos) continue;
    total += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dispatch_bench: N jobs through the dispatch loop on the sandbox"};
  int jobs = 10'000;
  int workers = 3;
  int timeoutSeconds = 600;
  std::string adapter = MKA_BENCH_ADAPTER;
  std::string gcInterval;
  std::string dispatcher = "all-at-once";
  int churn = 0;
  int inFlight = 500;
  int rssEvery = 10'000;
  int runTimeMs = 1000;
  app.add_option("--jobs", jobs, "Jobs to submit (PipelineRuns)")->capture_default_str();
  app.add_option("--workers", workers, "Worker clusters")->capture_default_str();
  app.add_option("--timeout", timeoutSeconds, "Give up after this many seconds")->capture_default_str();
  app.add_option("--adapter", adapter, "The multikueue-adapter binary")->capture_default_str();
  app.add_option("--gc-interval", gcInterval,
                 "multiKueue.gcInterval for the adapter (a Go duration, e.g. 5s); default: the adapter's (1m), "
                 "which a 10,000-job run does not reach");
  app.add_option("--dispatcher", dispatcher, "all-at-once, incremental or quota-aware")
      ->check(CLI::IsMember({"all-at-once", "incremental", "quota-aware"}))
      ->capture_default_str();
  app.add_option("--churn", churn,
                 "Instead of the backlog and steady phases: this many jobs through the loop, each deleted once "
                 "finished, the adapter's RSS sampled along the way");
  app.add_option("--in-flight", inFlight, "--churn: jobs that exist at once")->capture_default_str();
  app.add_option("--rss-every", rssEvery, "--churn: sample the adapter's RSS after this many deleted jobs")
      ->capture_default_str();
  app.add_option("--run-time-ms", runTimeMs, "--churn: how long each job runs on its worker")->capture_default_str();
  // The benchmark always runs as deployed with the job integration (see the top of this file);
  // the flag that asked for it is still accepted, so recorded command lines run unchanged.
  app.add_flag("--integration")->description("Accepted and ignored: the job integration always runs");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  std::signal(SIGPIPE, SIG_IGN);

  const fs::path dir = fs::temp_directory_path() / ("dispatch-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir / "certs");
  pid_t child = -1;
  int rc = 0;
  try {
    mka::demo::Environment::Options eo;
    eo.workers.clear();
    for (int i = 1; i <= workers; ++i) eo.workers.push_back("worker" + std::to_string(i));
    // Capacity for all: every worker's ClusterQueue can hold every job (the steady phase's too),
    // so the figures measure dispatch, not waiting for room.
    if (churn > 0) jobs = inFlight;  // the quota and watch history below are per jobs that exist at once
    for (const auto& w : eo.workers) eo.workerJobQuota[w] = jobs + 1000;
    eo.crdDirectory = fs::path(MKA_BENCH_SOURCE_DIR) / "test" / "fixtures" / "crds";
    eo.samplesDirectory = fs::path(MKA_BENCH_SOURCE_DIR) / "manifests" / "samples";
    // Backlog: jobs keep running, so all N are tracked at the end. Churn: they end and go.
    eo.runTime = churn > 0 ? std::chrono::nanoseconds{std::chrono::milliseconds{runTimeMs}}
                           : std::chrono::nanoseconds{std::chrono::hours{1}};
    eo.watchHistory = 50 * static_cast<std::size_t>(jobs) + 10'000;
    mka::demo::Environment env(eo);
    env.setJobQuota("manager", jobs + 1000);  // the manager's queue admits every job too
    const auto kubeconfigs = env.sandbox().writeKubeconfigs(dir / "kubeconfigs");

    mka::net::CertificateAuthority ca;
    const auto cert = ca.issue({});
    std::ofstream(dir / "certs" / "tls.crt") << cert.certPem;
    std::ofstream(dir / "certs" / "tls.key") << cert.keyPem;
    std::ofstream(dir / "config.yaml") << R"(apiVersion: config.multikueue-adapter.dev/v1alpha1
kind: AdapterConfiguration
namespace: kueue-system
leaderElection: {leaderElect: true, resourceNamespace: kueue-system}
clientConnection: {qps: 1000000, burst: 1000000}
managedByDefaulting: QueueLabeled
multiKueue:
  externalFrameworks:
  - name: PipelineRun.v1.tekton.dev
  - name: Workflow.v1alpha1.argoproj.io
)";
    if (!gcInterval.empty())
      std::ofstream(dir / "config.yaml", std::ios::app) << "  gcInterval: " << gcInterval << "\n";
    const std::map<std::string, std::string> dispatchers = {
        {"all-at-once", "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"},
        {"incremental", "kueue.x-k8s.io/multikueue-dispatcher-incremental"},
        {"quota-aware", "multikueue-adapter.dev/quota-aware"}};
    std::ofstream(dir / "config.yaml", std::ios::app) << "  dispatcherName: " << dispatchers.at(dispatcher) << "\n";
    std::ofstream(dir / "config.yaml", std::ios::app)
        << "integrations:\n  frameworks:\n  - name: PipelineRun.v1.tekton.dev\n  - name: "
           "Workflow.v1alpha1.argoproj.io\n";

    // Recorders first, so no event is missed.
    auto& manager = env.cluster("manager");
    Recorder reserved(manager, "kueue.x-k8s.io", "workloads",
                      {[](const json& wl) { return mka::api::hasQuotaReservation(wl); }});
    Recorder managerStatus(manager, "tekton.dev", "pipelineruns",
                           {[](const json& job) { return job.contains("status"); }});
    // Per worker: job copies created (property 0) and showing a status (property 1).
    constexpr std::size_t kCreated = 0, kWithStatus = 1;
    std::vector<std::unique_ptr<Recorder>> remote, remoteWorkloads;
    for (const auto& w : eo.workers) {
      // Every Workload copy created there, winners and losers alike (the dispatcher's cost), and
      // when each got its quota there.
      remoteWorkloads.push_back(std::make_unique<Recorder>(
          env.cluster(w), "kueue.x-k8s.io", "workloads",
          std::vector<Recorder::Predicate>{[](const json&) { return true; },
                                           [](const json& wl) { return mka::api::hasQuotaReservation(wl); }}));
      remote.push_back(std::make_unique<Recorder>(
          env.cluster(w), "tekton.dev", "pipelineruns",
          std::vector<Recorder::Predicate>{[](const json&) { return true; },
                                           [](const json& job) { return job.contains("status"); }}));
    }

    auto submit = [&](int from, int to, std::chrono::milliseconds gap) {
      // Suspended (PipelineRunPending), as /mutate leaves a queued run.
      const json spec = {{"managedBy", "kueue.x-k8s.io/multikueue"},
                         {"pipelineRef", {{"name", "build"}}},
                         {"status", "PipelineRunPending"}};
      for (int i = from; i < to; ++i) {
        manager.api().create(
            {"tekton.dev", "v1", "pipelineruns", "default", "", ""},
            json{{"apiVersion", "tekton.dev/v1"},
                 {"kind", "PipelineRun"},
                 {"metadata",
                  {{"name", "bench-" + std::to_string(i)}, {"labels", {{"kueue.x-k8s.io/queue-name", "user-queue"}}}}},
                 {"spec", spec}});
        if (gap.count() > 0) std::this_thread::sleep_for(gap);
      }
    };
    auto waitFor = [&](const std::function<bool()>& done, const char* what) {
      const auto deadline = Steady::now() + std::chrono::seconds{timeoutSeconds};
      while (!done()) {
        if (Steady::now() > deadline) throw std::runtime_error(std::string("timed out waiting for ") + what);
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
      }
    };
    auto remoteCount = [&] {
      std::size_t n = 0;
      for (auto& r : remote) n += r->count(kCreated);
      return n;
    };

    const int metricsPort = mka::bench::freeLoopbackPort();
    std::vector<std::string> args{adapter,
                                  "serve",
                                  "--config=" + (dir / "config.yaml").string(),
                                  "--kubeconfig=" + kubeconfigs.at("manager").string(),
                                  "--cert-dir=" + (dir / "certs").string(),
                                  "--webhook-bind-address=127.0.0.1:0",
                                  "--health-probe-bind-address=0",
                                  "--metrics-bind-address=127.0.0.1:" + std::to_string(metricsPort),
                                  "--log-level=warn"};
    std::vector<char*> argvChild;
    for (auto& a : args) argvChild.push_back(a.data());
    argvChild.push_back(nullptr);
    auto spawnAdapter = [&] {
      if (posix_spawn(&child, adapter.c_str(), nullptr, nullptr, argvChild.data(), environ) != 0)
        throw std::runtime_error("cannot start " + adapter);
    };

    if (churn > 0) {
      // Churn: jobs arrive while earlier ones finish and are deleted, as on a busy manager where
      // users (or Tekton's pruner) delete finished runs; at most --in-flight exist at once. The
      // adapter's RSS after every --rss-every deleted jobs: memory kept per job ever seen shows
      // as a slope.
      std::printf(
          "dispatch_bench: churn of %d PipelineRuns, %d at once, each running %d ms then deleted, %d workers, "
          "dispatcher %s (%s build)\n",
          churn, inFlight, runTimeMs, workers, dispatcher.c_str(), MKA_BENCH_BUILD_TYPE);
      Recorder finished(manager, "tekton.dev", "pipelineruns", {runFinished});
      const auto start = Steady::now();
      spawnAdapter();
      int submitted = 0, deleted = 0;
      std::vector<std::pair<double, double>> samples;  // (deleted jobs / 10,000, RSS MiB)
      auto lastProgress = Steady::now();
      while (deleted < churn) {
        bool progressed = false;
        for (; submitted < churn && submitted - deleted < inFlight; ++submitted) {
          submit(submitted, submitted + 1, std::chrono::milliseconds{0});
          progressed = true;
        }
        for (const auto& name : finished.takeFresh()) {
          manager.api().remove({"tekton.dev", "v1", "pipelineruns", "default", name, ""});
          progressed = true;
          if (++deleted % rssEvery != 0) continue;
          const auto stats = mka::bench::statsOf(child);
          samples.emplace_back(deleted / 10'000.0, stats.rssMiB);
          std::printf("adapter RSS         %.1f MiB after %d jobs (%.0f s, %.2f CPU s)\n", stats.rssMiB, deleted,
                      std::chrono::duration<double>(Steady::now() - start).count(), stats.cpuSeconds);
          std::fflush(stdout);
        }
        if (progressed) {
          lastProgress = Steady::now();
        } else {
          if (Steady::now() - lastProgress > std::chrono::seconds{timeoutSeconds})
            throw std::runtime_error("no job finished for " + std::to_string(timeoutSeconds) + " s");
          std::this_thread::sleep_for(std::chrono::milliseconds{10});
        }
      }
      const double churnSeconds = std::chrono::duration<double>(Steady::now() - start).count();
      // What is left once the last deletions have gone through: nothing, on any cluster.
      auto leftovers = [&] {
        std::size_t n = manager.api()
                            .list({"kueue.x-k8s.io", "v1beta2", "workloads", "", "", ""}, {})
                            .value("items", json::array())
                            .size();
        for (const auto& w : eo.workers)
          for (const auto& plural : {"workloads", "pipelineruns"}) {
            const bool kueue = std::string(plural) == "workloads";
            n += env.cluster(w)
                     .api()
                     .list({kueue ? "kueue.x-k8s.io" : "tekton.dev", kueue ? "v1beta2" : "v1", plural, "", "", ""}, {})
                     .value("items", json::array())
                     .size();
          }
        return n;
      };
      const auto settleDeadline = Steady::now() + std::chrono::seconds{120};
      while (leftovers() > 0 && Steady::now() < settleDeadline)
        std::this_thread::sleep_for(std::chrono::milliseconds{200});
      const auto after = mka::bench::statsOf(child);
      std::printf("churn               %d jobs in %.1f s (%.0f jobs/s), %d at once\n", churn, churnSeconds,
                  churn / churnSeconds, inFlight);
      // The first sample includes the warm-up (caches, pools, the allocator's arenas growing to
      // their working size); a leak is a slope over the rest.
      if (samples.size() >= 3) {
        const std::vector<std::pair<double, double>> warm(samples.begin() + 1, samples.end());
        std::printf(
            "RSS slope           %+.2f MiB per 10,000 jobs after the first %d (%zu samples, %.1f -> %.1f MiB)\n",
            slopeOf(warm), rssEvery, warm.size(), warm.front().second, warm.back().second);
      }
      std::printf("adapter             %.2f CPU s in all (%.2f ms per job), peak RSS %.1f MiB, RSS now %.1f MiB\n",
                  after.cpuSeconds, 1000.0 * after.cpuSeconds / churn, after.peakRssMiB, after.rssMiB);
      std::size_t copies = 0;
      for (auto& r : remoteWorkloads) copies += r->count();
      std::printf("remote copies       %.2f Workload copies created per job\n", static_cast<double>(copies) / churn);
      const auto left = leftovers();
      std::printf("leftovers           %zu Workloads and PipelineRuns on the clusters after the last deletion%s\n",
                  left, left > 0 ? " (!!! expected none)" : "");
    } else {
      // Phase 1, backlog: N jobs queued before the adapter starts (as after an adapter restart or
      // an outage): how fast it works through them. Nothing makes their Workloads until the
      // adapter's integration runs: its backlog starts at the jobs.
      std::printf(
          "dispatch_bench: %d PipelineRuns, %d workers, dispatcher %s (%s build), with the job integration (the "
          "adapter creates the manager's Workloads)\n",
          jobs, workers, dispatcher.c_str(), MKA_BENCH_BUILD_TYPE);
      const auto submitStart = Steady::now();
      submit(0, jobs, std::chrono::milliseconds{0});
      std::printf("backlog: %d suspended jobs submitted in %.1f s, no Workload yet\n", jobs,
                  std::chrono::duration<double>(Steady::now() - submitStart).count());

      const double sandboxBefore = mka::bench::statsOf(::getpid()).cpuSeconds;
      const auto sandboxThreadsBefore = mka::bench::threadCpuByName(::getpid());
      const auto spawned = Steady::now();
      spawnAdapter();
      waitFor(
          [&] {
            return remoteCount() >= static_cast<std::size_t>(jobs) &&
                   managerStatus.count() >= static_cast<std::size_t>(jobs);
          },
          "the backlog to be dispatched");
      Steady::time_point lastCreated = spawned, firstCreated = Steady::time_point::max();
      for (auto& r : remote)
        for (auto& [name, t] : r->snapshot(kCreated)) {
          lastCreated = std::max(lastCreated, t);
          firstCreated = std::min(firstCreated, t);
        }
      const double firstSeconds = std::chrono::duration<double>(firstCreated - spawned).count();
      // The whole flow: the last backlog job whose worker status reached the manager's job.
      Steady::time_point lastStatus = spawned;
      for (auto& [name, t] : managerStatus.snapshot()) lastStatus = std::max(lastStatus, t);
      const double flowSeconds = std::chrono::duration<double>(lastStatus - spawned).count();
      const double backlogSeconds = std::chrono::duration<double>(lastCreated - spawned).count();
      const auto afterBacklog = mka::bench::statsOf(child);
      const double sandboxBacklog = mka::bench::statsOf(::getpid()).cpuSeconds - sandboxBefore;
      const auto managerIntegration = integrationCpu(mka::bench::threadCpuByName(child));
      const auto workersIntegration = integrationCpu(mka::bench::threadCpuByName(::getpid()), sandboxThreadsBefore);
      const double backlogReconciles = reconcilesOf(metricsPort, "mk-workload");

      // The backlog leaves work behind once every copy exists (the manager's admissions, loser
      // copies deleted, status writes): phase 2 starts once the adapter has gone quiet (under 10 %
      // of a CPU for a second), so its latencies are those of a steady state, not of that tail.
      const auto settleStart = Steady::now();
      for (double last = mka::bench::statsOf(child).cpuSeconds;;) {
        std::this_thread::sleep_for(std::chrono::seconds{1});
        const double now = mka::bench::statsOf(child).cpuSeconds;
        if (now - last < 0.1 || Steady::now() - settleStart > std::chrono::seconds{120}) break;
        last = now;
      }
      const double settleSeconds = std::chrono::duration<double>(Steady::now() - settleStart).count();

      // Phase 2, steady state: jobs arriving one by one while N are tracked; per-job latencies.
      const int steady = std::max(1, std::min(500, jobs / 4));
      const auto steadyStart = Steady::now();
      submit(jobs, jobs + steady, std::chrono::milliseconds{10});
      waitFor([&] { return managerStatus.count() >= static_cast<std::size_t>(jobs + steady); }, "the steady jobs");
      const auto after = mka::bench::statsOf(child);

      std::map<std::string, Steady::time_point> created, workerStatus;
      for (auto& r : remote) {
        for (auto& [name, t] : r->snapshot(kCreated)) created.emplace(name, t);
        for (auto& [name, t] : r->snapshot(kWithStatus)) workerStatus.emplace(name, t);
      }
      std::vector<double> dispatch, sync;
      // The dispatch latency in its three steps: the adapter copies the Workload to a worker,
      // that worker's Kueue reserves quota, the adapter creates the job copy there.
      std::vector<double> toCopy, toRemoteQuota, toJob;
      std::map<std::string, Steady::time_point> copiedAt, remoteReservedAt;  // earliest on any worker
      for (auto& r : remoteWorkloads) {
        for (auto& [name, t] : r->snapshot(0))
          if (auto [it, fresh] = copiedAt.emplace(name, t); !fresh) it->second = std::min(it->second, t);
        for (auto& [name, t] : r->snapshot(1))
          if (auto [it, fresh] = remoteReservedAt.emplace(name, t); !fresh) it->second = std::min(it->second, t);
      }
      const auto ms = [](Steady::time_point from, Steady::time_point to) {
        return std::chrono::duration<double, std::milli>(to - from).count();
      };
      const auto reservedAt = reserved.snapshot();
      const auto statusAt = managerStatus.snapshot();
      for (int i = jobs; i < jobs + steady; ++i) {
        const auto job = "bench-" + std::to_string(i);
        for (const auto& [wl, t] : reservedAt) {
          if (wl.rfind("pipelinerun-" + job + "-", 0) != 0 || wl.size() != job.size() + 18) continue;
          const auto it = created.find(job);
          if (it == created.end()) continue;
          dispatch.push_back(ms(t, it->second));
          const auto copied = copiedAt.find(wl);
          const auto remoteReserved = remoteReservedAt.find(wl);
          if (copied == copiedAt.end() || remoteReserved == remoteReservedAt.end()) continue;
          toCopy.push_back(ms(t, copied->second));
          toRemoteQuota.push_back(ms(copied->second, remoteReserved->second));
          toJob.push_back(ms(remoteReserved->second, it->second));
        }
        auto w = workerStatus.find(job);
        auto m = statusAt.find(job);
        if (w != workerStatus.end() && m != statusAt.end())
          sync.push_back(std::chrono::duration<double, std::milli>(m->second - w->second).count());
      }
      // CPU seconds over the backlog as milliseconds per backlog job.
      const auto perJob = [&](double seconds) { return jobs > 0 ? 1000.0 * seconds / jobs : 0.0; };
      std::printf(
          "backlog throughput  %.0f jobs/s  (%d jobs: adapter process start -> last job copy created, %.1f s, "
          "%.2f CPU s)\n",
          backlogSeconds > 0 ? jobs / backlogSeconds : 0.0, jobs, backlogSeconds, afterBacklog.cpuSeconds);
      // Everything but the adapter runs in this process: the four API servers, the Kueue
      // stand-ins, the recorders, the workers' integrations and the framework controller
      // stand-ins. Its CPU shows how much of the machine the sandbox took.
      std::printf(
          "sandbox CPU         %.2f CPU s over the backlog (this process: API servers, Kueue stand-ins, "
          "recorders, the workers' integrations and Tekton stand-ins), %.2f ms per job\n",
          sandboxBacklog, perJob(sandboxBacklog));
      std::printf(
          "integration CPU     manager: %.2f ms per job in its reconcilers (in the adapter's CPU above; the "
          "informers it shares with dispatch took %.2f ms per job)\n",
          perJob(managerIntegration.reconcilers), perJob(managerIntegration.informers));
      std::printf(
          "                    workers: %.2f ms per job for the %d of them (reconcilers %.2f, informers %.2f; in "
          "the sandbox's CPU above)\n",
          perJob(workersIntegration.reconcilers + workersIntegration.informers), workers,
          perJob(workersIntegration.reconcilers), perJob(workersIntegration.informers));
      std::printf("first job copy      %.2f s after the adapter process started\n", firstSeconds);
      {
        // Copies created in each tenth of the backlog: a stall (a backoff, a lost wake-up) shows as
        // a tenth with few copies while the CPU figures stay the same.
        std::vector<int> tenths(10, 0);
        for (auto& r : remote)
          for (auto& [name, t] : r->snapshot(kCreated)) {
            if (std::stoi(name.substr(name.rfind('-') + 1)) >= jobs) continue;  // a steady-phase job
            const double at = std::chrono::duration<double>(t - spawned).count();
            const auto i = static_cast<std::size_t>(std::clamp(10.0 * at / std::max(backlogSeconds, 1e-9), 0.0, 9.0));
            ++tenths[i];
          }
        std::printf("copies per tenth    ");
        for (const int n : tenths) std::printf(" %d", n);
        std::printf("  (of the backlog's %.1f s)\n", backlogSeconds);
      }
      std::printf(
          "backlog end to end  %.0f jobs/s  (adapter process start -> the last job's worker status on the "
          "manager, %.1f s)\n",
          flowSeconds > 0 ? jobs / flowSeconds : 0.0, flowSeconds);
      std::printf(
          "steady state        %d jobs, one per 10 ms, %.1f s, while %d are tracked (started once the adapter "
          "was idle, %.0f s after the backlog)\n",
          steady, std::chrono::duration<double>(Steady::now() - steadyStart).count(), jobs, settleSeconds);
      std::printf(
          "dispatch latency    p50 %.1f ms  p99 %.1f ms  (quota reserved -> job copy created on a worker, %zu "
          "samples)\n",
          percentile(dispatch, 0.5), percentile(dispatch, 0.99), dispatch.size());
      std::printf(
          "  in steps          p50 / p99: Workload copied %.1f / %.1f ms, quota on the worker %.1f / %.1f ms, job "
          "copied %.1f / %.1f ms\n",
          percentile(toCopy, 0.5), percentile(toCopy, 0.99), percentile(toRemoteQuota, 0.5),
          percentile(toRemoteQuota, 0.99), percentile(toJob, 0.5), percentile(toJob, 0.99));
      std::printf(
          "status sync         p50 %.1f ms  p99 %.1f ms  (worker job status -> manager job status, %zu samples)\n",
          percentile(sync, 0.5), percentile(sync, 0.99), sync.size());
      std::printf("adapter             %.2f CPU s in all, peak RSS %.1f MiB with %d jobs tracked\n", after.cpuSeconds,
                  after.peakRssMiB, jobs + steady);
      // The sandbox (four API servers, Kueues, the workers' integrations) shares the CPUs with the
      // adapter here; in a real deployment they run elsewhere. The adapter's CPU per job bounds
      // what it could do on these CPUs alone: a projection, not a measurement (it assumes enough
      // concurrency to keep every CPU busy).
      cpu_set_t cpus;
      CPU_ZERO(&cpus);
      const int usable = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
      const double msPerJob = perJob(afterBacklog.cpuSeconds);
      std::printf(
          "adapter CPU         %.2f ms per job in the backlog -> about %.0f jobs/s if the adapter had the %d "
          "CPUs to itself (projection)\n",
          msPerJob, msPerJob > 0 ? 1000.0 * usable / msPerJob : 0.0, usable);
      // The adapter's CPU over the backlog varies from run to run by more than most changes
      // save, largely with how many reconciles the events of a job take; per reconcile, runs
      // compare better.
      if (backlogReconciles > 0) {
        std::printf(
            "adapter reconciles  %.0f Workload reconciles in the backlog (%.2f per job) -> %.0f us of adapter CPU "
            "per reconcile\n",
            backlogReconciles, backlogReconciles / jobs, 1e6 * afterBacklog.cpuSeconds / backlogReconciles);
      }
      {
        // Names repeat across workers (a copy keeps its Workload's name): counted per worker.
        std::size_t copies = 0;
        for (auto& r : remoteWorkloads) copies += r->count();
        std::printf("remote copies       %.2f Workload copies created per job (%zu for %d jobs on %d workers)\n",
                    static_cast<double>(copies) / (jobs + steady), copies, jobs + steady, workers);
      }
      bool lost = reserved.lost() || managerStatus.lost();
      for (auto& r : remoteWorkloads) lost = lost || r->lost();
      for (auto& r : remote) lost = lost || r->lost();
      if (lost) std::printf("!!! a recorder's watch fell behind the history kept; figures are incomplete\n");
    }
    kill(child, SIGTERM);
    int status = 0;
    waitpid(child, &status, 0);
    child = -1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dispatch_bench: %s\n", e.what());
    rc = 1;
  }
  if (child > 0) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc;
}
