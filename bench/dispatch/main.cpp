// dispatch_bench: N jobs through the dispatch loop (see bench/README.md).
//
// The sandbox (a manager and workers with Kueue stand-ins) runs in this process; the adapter
// runs as its own process (`multikueue-adapter serve`, leader election on, client rate limits
// off), so its CPU time and peak RSS are its own. Timings come from in-process watches on the
// emulated clusters, which see every write as it is committed:
// - dispatch latency: a manager Workload's quota reservation -> the job copy created on a worker;
// - status-sync latency: a worker job's first status write -> that status on the manager's job.
// Prints figures; exits non-zero only when the setup fails or jobs never get through.

#include <CLI/CLI.hpp>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <sstream>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "mka/app/environment.h"
#include "mka/multikueue/workload_status.h"
#include "mka/net/pki.h"
#include "mka/sandbox/object_store.h"

extern char** environ;

namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

// First time each object (by name) showed a property, recorded by a thread following one
// in-process watch.
class Recorder {
 public:
  using Predicate = std::function<bool(const json& object)>;
  Recorder(mka::sandbox::Cluster& cluster, std::string group, std::string plural, Predicate predicate)
      : predicate_(std::move(predicate)) {
    watch_ = cluster.store().watch(group, plural, "", 0, nullptr);
    thread_ = std::thread([this] { run(); });
  }
  ~Recorder() {
    stop_ = true;
    watch_->close();
    thread_.join();
  }
  std::map<std::string, Steady::time_point> snapshot() {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  std::size_t count() {
    std::lock_guard lock(mutex_);
    return seen_.size();
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
      if (event->type == mka::sandbox::EventType::Deleted || event->type == mka::sandbox::EventType::Bookmark || !predicate_(event->object)) continue;
      const auto name = event->object.value("metadata", json::object()).value("name", "");
      std::lock_guard lock(mutex_);
      seen_.emplace(name, Steady::now());
    }
  }
  Predicate predicate_;
  std::unique_ptr<mka::sandbox::ObjectStore::Watch> watch_;
  std::mutex mutex_;
  std::map<std::string, Steady::time_point> seen_;
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

struct ProcessStats {
  double cpuSeconds = 0;
  double peakRssMiB = 0;
};

ProcessStats statsOf(pid_t pid) {
  ProcessStats stats;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    unsigned long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stoul(field);
      if (i == 15) stime = std::stoul(field);
    }
    stats.cpuSeconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) stats.peakRssMiB = std::stod(line.substr(6)) / 1024.0;
  return stats;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dispatch_bench: N jobs through the dispatch loop on the sandbox"};
  int jobs = 10'000;
  int workers = 3;
  int timeoutSeconds = 600;
  std::string adapter = MKA_BENCH_ADAPTER;
  app.add_option("--jobs", jobs, "Jobs to submit (PipelineRuns)")->capture_default_str();
  app.add_option("--workers", workers, "Worker clusters")->capture_default_str();
  app.add_option("--timeout", timeoutSeconds, "Give up after this many seconds")->capture_default_str();
  app.add_option("--adapter", adapter, "The multikueue-adapter binary")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  std::signal(SIGPIPE, SIG_IGN);

  const fs::path dir = fs::temp_directory_path() / ("dispatch-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir / "certs");
  pid_t child = -1;
  int rc = 0;
  try {
    mka::app::Environment::Options eo;
    for (int i = 1; i <= workers; ++i) eo.workers.push_back("worker" + std::to_string(i));
    eo.crdDirectory = fs::path(MKA_BENCH_SOURCE_DIR) / "test" / "fixtures" / "crds";
    eo.samplesDirectory = fs::path(MKA_BENCH_SOURCE_DIR) / "manifests" / "samples";
    eo.runTime = std::chrono::hours{1};  // jobs keep running: all N are tracked at the end
    eo.watchHistory = 50 * static_cast<std::size_t>(jobs) + 10'000;
    mka::app::Environment env(eo);
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

    // Recorders first, so no event is missed.
    auto& manager = env.cluster("manager");
    Recorder reserved(manager, "kueue.x-k8s.io", "workloads",
                      [](const json& wl) { return mka::multikueue::hasQuotaReservation(wl); });
    Recorder managerStatus(manager, "tekton.dev", "pipelineruns", [](const json& job) { return job.contains("status"); });
    std::vector<std::unique_ptr<Recorder>> remoteCreated, remoteStatus;
    for (const auto& w : eo.workers) {
      remoteCreated.push_back(std::make_unique<Recorder>(env.cluster(w), "tekton.dev", "pipelineruns",
                                                         [](const json&) { return true; }));
      remoteStatus.push_back(std::make_unique<Recorder>(env.cluster(w), "tekton.dev", "pipelineruns",
                                                        [](const json& job) { return job.contains("status"); }));
    }

    std::vector<std::string> args{adapter,
                                  "serve",
                                  "--config=" + (dir / "config.yaml").string(),
                                  "--kubeconfig=" + kubeconfigs.at("manager").string(),
                                  "--cert-dir=" + (dir / "certs").string(),
                                  "--webhook-bind-address=127.0.0.1:0",
                                  "--health-probe-bind-address=0",
                                  "--metrics-bind-address=0",
                                  "--log-level=warn"};
    std::vector<char*> argvChild;
    for (auto& a : args) argvChild.push_back(a.data());
    argvChild.push_back(nullptr);
    if (posix_spawn(&child, adapter.c_str(), nullptr, nullptr, argvChild.data(), environ) != 0)
      throw std::runtime_error("cannot start " + adapter);

    // The adapter is dispatching once its AdmissionCheck is Active.
    const auto ready = Steady::now() + std::chrono::seconds{60};
    while (true) {
      const auto ac = manager.api().get({"kueue.x-k8s.io", "v1beta2", "admissionchecks", "", "multikueue-adapter", ""});
      if (mka::multikueue::conditionIsTrue(ac, "Active")) break;
      if (Steady::now() > ready) throw std::runtime_error("the adapter's AdmissionCheck never became Active");
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    const auto before = statsOf(child);

    std::printf("dispatch_bench: %d PipelineRuns, %d workers, adapter pid %d (%s build)\n", jobs, workers, child,
                MKA_BENCH_BUILD_TYPE);
    const auto start = Steady::now();
    for (int i = 0; i < jobs; ++i) {
      manager.api().create(
          {"tekton.dev", "v1", "pipelineruns", "default", "", ""},
          json{{"apiVersion", "tekton.dev/v1"},
               {"kind", "PipelineRun"},
               {"metadata", {{"name", "bench-" + std::to_string(i)}, {"labels", {{"kueue.x-k8s.io/queue-name", "user-queue"}}}}},
               {"spec", {{"managedBy", "kueue.x-k8s.io/multikueue"}, {"pipelineRef", {{"name", "build"}}}}}});
    }
    const auto submitted = Steady::now();
    const auto deadline = start + std::chrono::seconds{timeoutSeconds};
    while (managerStatus.count() < static_cast<std::size_t>(jobs) && Steady::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    const auto finished = Steady::now();
    const auto after = statsOf(child);

    // Join the recordings by job name (the Workload name embeds the job name: pipelinerun-<job>-<hash>).
    std::map<std::string, Steady::time_point> created, workerStatus;
    for (auto& r : remoteCreated)
      for (auto& [name, t] : r->snapshot()) created.emplace(name, t);
    for (auto& r : remoteStatus)
      for (auto& [name, t] : r->snapshot()) workerStatus.emplace(name, t);
    std::vector<double> dispatch, sync;
    Steady::time_point lastCreated = start;
    for (const auto& [wl, t] : reserved.snapshot()) {
      const auto job = wl.substr(std::string("pipelinerun-").size(), wl.size() - std::string("pipelinerun-").size() - 6);
      auto it = created.find(job);
      if (it == created.end()) continue;
      dispatch.push_back(std::chrono::duration<double, std::milli>(it->second - t).count());
      lastCreated = std::max(lastCreated, it->second);
    }
    for (const auto& [job, t] : managerStatus.snapshot()) {
      auto it = workerStatus.find(job);
      if (it != workerStatus.end()) sync.push_back(std::chrono::duration<double, std::milli>(t - it->second).count());
    }
    const double seconds = std::chrono::duration<double>(lastCreated - start).count();
    std::printf("submitted %d jobs in %.2f s; %zu dispatched, %zu with status on the manager after %.2f s\n", jobs,
                std::chrono::duration<double>(submitted - start).count(), created.size(), managerStatus.count(),
                std::chrono::duration<double>(finished - start).count());
    std::printf("throughput        %.0f jobs/s (first submit -> last remote job created)\n",
                seconds > 0 ? static_cast<double>(created.size()) / seconds : 0.0);
    std::printf("dispatch latency  p50 %.1f ms  p99 %.1f ms  (quota reserved -> remote job created, %zu samples)\n",
                percentile(dispatch, 0.5), percentile(dispatch, 0.99), dispatch.size());
    std::printf("status sync       p50 %.1f ms  p99 %.1f ms  (worker status -> manager status, %zu samples)\n",
                percentile(sync, 0.5), percentile(sync, 0.99), sync.size());
    std::printf("adapter           %.2f CPU s during the run (%.2f total), peak RSS %.1f MiB with %zu jobs tracked\n",
                after.cpuSeconds - before.cpuSeconds, after.cpuSeconds, after.peakRssMiB, created.size());
    bool lost = reserved.lost() || managerStatus.lost();
    for (auto& r : remoteCreated) lost = lost || r->lost();
    for (auto& r : remoteStatus) lost = lost || r->lost();
    if (lost) std::printf("!!! a recorder's watch fell behind the history kept; figures are incomplete\n");
    if (managerStatus.count() < static_cast<std::size_t>(jobs)) {
      std::printf("!!! only %zu of %d jobs got through within %d s\n", managerStatus.count(), jobs, timeoutSeconds);
      rc = 1;
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
