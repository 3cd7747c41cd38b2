// webhook_bench: throughput and latency of the admission webhook over TLS keep-alive, against
// the ceiling of the same server answering a constant AdmissionReview. See bench/README.md.
//
// In one process: a throwaway CA and serving certificate, the webhook's server in TLS mode
// (mka::net::EventServer as `serve` runs it, or with --server httplib the thread-per-connection
// mka::net::HttpServer) with POST /mutate (the real AdmissionHandler with its config store, queue
// index and metrics) and POST /constant (a precomputed answer: same TLS and HTTP path, no JSON
// work), and a load generator with one persistent TLS connection per thread. In a process of its
// own, when `go` is installed: the Go peer (../shared/peers/go-webhook, net/http + encoding/json)
// with the same certificate, loaded by the same generator as a third endpoint, so the ratios
// come from one run. Prints figures; never fails on speed (the exit code is 1 only when requests
// failed or the setup did not work).

#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <openssl/crypto.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "../common/process_stats.h"
#include "bench_configuration.h"
#include "client.h"
#include "mka/config/configuration.h"
#include "mka/config/store.h"
#include "mka/net/certificate_reloader.h"
#include "mka/net/event_server.h"
#include "mka/net/http_server.h"
#include "mka/net/pki.h"
#include "mka/observability/metrics.h"
#include "mka/webhook/admission_handler.h"
#include "mka/webhook/queue_index.h"

#ifndef MKA_BENCH_BUILD_TYPE
#define MKA_BENCH_BUILD_TYPE "unknown"
#endif
#ifndef MKA_BENCH_FIXTURE
#define MKA_BENCH_FIXTURE ""
#endif
#ifndef MKA_BENCH_GO_PEER
#define MKA_BENCH_GO_PEER ""
#endif

namespace {

#ifdef __clang__
constexpr const char* kCompiler = "clang " __clang_version__;
#else
constexpr const char* kCompiler = "g++ " __VERSION__;
#endif

using namespace mka;
using namespace std::chrono_literals;

struct Flags {
  std::size_t connections = 32;
  double duration = 5;
  double rate = 5000;
  double warmup = 1;
  std::string endpoint = "all";
  std::string server = "event";
  std::size_t serverThreads = mka::net::eventLoopsFor(std::thread::hardware_concurrency());  // as `serve` runs it
  std::string goPeer = MKA_BENCH_GO_PEER;
  int rounds = 1;
  std::string modes = "both";
  std::string body;
  std::string policy = "QueueLabeled";
  bool acceptGzip = false;
};

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return static_cast<int>(std::thread::hardware_concurrency());
  return CPU_COUNT(&set);
}

std::filesystem::path makeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "webhook-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

void writeFile(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

void printRow(const mka::bench::PhaseResult& r, int cpus) {
  const std::string mode = r.spec.mode == mka::bench::Mode::ClosedLoop
                               ? "max"
                               : "rate=" + std::to_string(static_cast<long long>(r.spec.rate));
  const double ok = r.ok > 0 ? static_cast<double>(r.ok) : 1;
  const double serverCpu = r.serverCpuSeconds();
  const double share = r.seconds > 0 ? 100.0 / (r.seconds * cpus) : 0.0;
  std::printf("%-9s %-10s %5zu %9.0f %8.3f %8.3f %8.3f %8.3f %7llu %8.1f %8.1f %5.0f%% %5.0f%%\n",
              r.spec.endpoint.c_str(), mode.c_str(), r.connections, r.requestsPerSecond(), r.percentileMs(0.50),
              r.percentileMs(0.90), r.percentileMs(0.99), r.percentileMs(1.0),
              static_cast<unsigned long long>(r.errors), serverCpu / ok * 1e6, r.clientCpuSeconds / ok * 1e6,
              (r.processCpuSeconds + r.peerCpuSeconds) * share, r.otherCpuSeconds() * share);
}

// Our /mutate against the Go peer and against our own ceiling, per round and median: only a
// ratio measured in one run means anything on a shared machine.
void printRatios(const std::vector<mka::bench::PhaseResult>& results) {
  for (auto mode : {mka::bench::Mode::ClosedLoop}) {
    std::map<std::string, std::vector<double>> rps;
    std::map<std::string, std::vector<double>> cpu;
    for (const auto& r : results) {
      if (r.spec.mode != mode || r.ok == 0) continue;
      rps[r.spec.endpoint].push_back(r.requestsPerSecond());
      cpu[r.spec.endpoint].push_back(r.serverCpuSeconds() / static_cast<double>(r.ok) * 1e6);
    }
    auto ratios = [&](const std::string& a, const std::string& b, const std::map<std::string, std::vector<double>>& of,
                      const char* what) {
      if (!of.count(a) || !of.count(b)) return;
      std::vector<double> each;
      for (std::size_t i = 0; i < std::min(of.at(a).size(), of.at(b).size()); ++i)
        each.push_back(of.at(a)[i] / of.at(b)[i]);
      std::string list;
      for (double x : each) list += (list.empty() ? "" : ", ") + std::to_string(x).substr(0, 4);
      std::sort(each.begin(), each.end());
      const std::size_t mid = each.size() / 2;
      const double median = each.size() % 2 == 1 ? each[mid] : (each[mid - 1] + each[mid]) / 2;
      std::printf("ratio %-18s %s/%s per round: %s; median %.2f\n", what, a.c_str(), b.c_str(), list.c_str(), median);
    };
    ratios("mutate", "go", rps, "req/s (max)");
    ratios("mutate", "constant", rps, "req/s (max)");
    ratios("mutate", "go", cpu, "server CPU/req");
  }
}

void printHeader() {
  std::printf("%-9s %-10s %5s %9s %8s %8s %8s %8s %7s %8s %8s %6s %6s\n", "endpoint", "mode", "conns", "req/s",
              "p50(ms)", "p90(ms)", "p99(ms)", "max(ms)", "errors", "srv_us/r", "cli_us/r", "cpu", "other");
}

// The Go peer, built from its source and run with the bench's certificate; stopped at exit.
struct GoPeer {
  pid_t pid = 0;
  int port = 0;
  ~GoPeer() {
    if (pid == 0) return;
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
  }
};

std::unique_ptr<GoPeer> startGoPeer(const std::string& source, const std::filesystem::path& workDir,
                                    const std::filesystem::path& cert, const std::filesystem::path& key) {
  if (source.empty() || !std::filesystem::exists(std::filesystem::path(source) / "main.go")) {
    std::printf("go peer: skipped: no Go peer source at \"%s\" (--go-peer)\n", source.c_str());
    return nullptr;
  }
  if (std::system("command -v go >/dev/null 2>&1") != 0) {
    std::printf("go peer: skipped: `go` is not installed (apt-get install golang-go)\n");
    return nullptr;
  }
  const auto binary = workDir / "go-webhook";
  const std::string build =
      "cd '" + source + "' && GOFLAGS=-mod=mod GOPROXY=off go build -o '" + binary.string() + "' . 2>&1";
  if (std::system(build.c_str()) != 0) {
    std::printf("go peer: skipped: `%s` failed\n", build.c_str());
    return nullptr;
  }
  auto peer = std::make_unique<GoPeer>();
  peer->port = mka::bench::freeLoopbackPort();
  const std::string address = "127.0.0.1:" + std::to_string(peer->port);
  std::vector<std::string> args = {binary.string(), "-addr", address, "-cert", cert.string(), "-key", key.string()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawn(&peer->pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    peer->pid = 0;
    throw std::runtime_error("cannot start the Go peer " + binary.string());
  }
  // Ready once it accepts connections.
  for (int attempt = 0; attempt < 250; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(peer->port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (up) return peer;
    std::this_thread::sleep_for(20ms);
  }
  throw std::runtime_error("the Go peer did not listen on " + address + " within 5 s");
}

int run(const Flags& flags) {
  spdlog::set_level(spdlog::level::warn);  // the server's info logs would otherwise be measured too
  std::signal(SIGPIPE, SIG_IGN);
  const int cpus = usableCpus();

  std::printf("webhook_bench  %s\n", today().c_str());
  std::printf("machine: %d usable CPUs (hardware_concurrency %u), %s\n", cpus, std::thread::hardware_concurrency(),
              cpuModel().c_str());
  utsname un{};
  uname(&un);
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  std::printf("load average before the run: %.2f %.2f %.2f%s\n", load[0], load[1], load[2],
              load[0] > 0.5 * cpus ? "  (!! the machine is busy: figures will be disturbed)" : "");
  std::printf("kernel: %s %s; build: %s, %s; %s; cpp-httplib %s\n", un.sysname, un.release, MKA_BENCH_BUILD_TYPE,
              kCompiler, OpenSSL_version(OPENSSL_VERSION), CPPHTTPLIB_VERSION);

  // ---- request body ----
  std::string bodySource;
  std::string rawBody;
  if (!flags.body.empty()) {
    rawBody = readFile(flags.body);
    bodySource = flags.body;
  } else {
    rawBody = readFile(MKA_BENCH_FIXTURE);
    bodySource = MKA_BENCH_FIXTURE;
  }
  // kube-apiserver sends compact JSON; keep the key order of the file.
  const std::string body = nlohmann::ordered_json::parse(rawBody).dump();
  std::printf("request body: %zu bytes (compact JSON) from %s\n", body.size(), bodySource.c_str());

  // ---- server ----
  const auto policy = config::parseManagedByDefaulting(flags.policy);
  if (!policy) throw std::runtime_error("--policy: expected QueueLabeled, MultiKueueQueues or Never");
  config::ConfigStore store(mka::bench::webhookBenchConfiguration(*policy));
  webhook::InMemoryQueueIndex queues;
  // Used by --policy MultiKueueQueues: the request's LocalQueue -> a ClusterQueue with a MultiKueue check.
  queues.upsertAdmissionCheck("multikueue", std::string(api::kMultiKueueControllerName));
  queues.upsertClusterQueue("bench-cq", {"multikueue"});
  {
    const auto review = nlohmann::json::parse(body);
    const auto& request = review.at("request");
    const std::string ns = request.value("namespace", "");
    const auto labels = request.at("object").at("metadata").value("labels", nlohmann::json::object());
    const std::string queue = labels.value("kueue.x-k8s.io/queue-name", "");
    queues.upsertLocalQueue(ns, queue, "bench-cq");
    std::printf("queue index: LocalQueue %s/%s -> ClusterQueue bench-cq (AdmissionCheck multikueue, controller %s)\n",
                ns.c_str(), queue.c_str(), std::string(api::kMultiKueueControllerName).c_str());
  }
  queues.setSynced(true);
  observability::Metrics metrics;
  webhook::AdmissionHandler handler(store, queues, &metrics);

  // The ceiling's answer: what /mutate answers for this body, computed once.
  const auto probe = handler.handle({"POST", "/mutate", "application/json", body});
  std::printf("/mutate answer (direct call): HTTP %d, %zu bytes, %s\n", probe.status, probe.body.size(),
              probe.body.find("\"patch\"") != std::string::npos ? "with a patch" : "WITHOUT A PATCH");
  if (probe.status != 200 || probe.body.find("\"patch\"") == std::string::npos) {
    std::printf("!!! the handler does not patch this request; body: %s\n", probe.body.substr(0, 500).c_str());
    return 1;
  }
  const std::string constantBody = probe.body;

  // A throwaway CA and serving certificate in a temporary directory removed at exit.
  struct Pki {
    std::filesystem::path dir = makeTempDir();
    std::filesystem::path caCert = dir / "ca.crt", tlsCert = dir / "tls.crt", tlsKey = dir / "tls.key";
    std::string keyType = "ECDSA P-256";
    ~Pki() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } pki;
  {
    net::CertificateAuthority ca("webhook_bench CA");
    const auto leaf = ca.issue();
    writeFile(pki.caCert, ca.certPem());
    writeFile(pki.tlsCert, leaf.certPem);
    writeFile(pki.tlsKey, leaf.keyPem);
  }
  auto certificates = std::make_shared<net::CertificateReloader>(pki.tlsCert, pki.tlsKey);
  certificates->start();
  if (!certificates->loaded()) throw std::runtime_error("certificate not loaded: " + certificates->lastError());

  // Server threads are "server-…" in profiles.
  std::unique_ptr<net::EventServer> eventServer;
  std::unique_ptr<net::HttpServer> threadServer;
  int port = 0;
  if (flags.server == "event") {
    net::EventServerOptions options;
    options.name = "server";
    options.host = "127.0.0.1";
    options.threads = flags.serverThreads;
    options.maxBodyBytes = webhook::kMaxRequestBytes;
    eventServer = std::make_unique<net::EventServer>(
        options, certificates, [&handler, &constantBody](const net::ServerRequest& req, net::ServerResponse& res) {
          if (req.path == "/constant") {
            res.contentType = "application/json";
            res.body = constantBody;
            return;
          }
          // The same adaptation as the adapter's own route (src/app/service.cpp).
          auto out = handler.handle({req.method, req.path, req.contentType, req.body});
          res.status = out.status;
          res.contentType = std::move(out.contentType);
          res.body = std::move(out.body);
        });
    port = eventServer->start();
  } else {
    net::ServerOptions options;
    options.name = "server";
    options.host = "127.0.0.1";
    options.port = 0;
    options.payloadMaxLength = webhook::kMaxRequestBytes;
    threadServer = std::make_unique<net::HttpServer>(options, certificates);
    threadServer->route("POST", "/mutate", [&handler](const httplib::Request& req, httplib::Response& res) {
      auto out = handler.handle({req.method, req.path, req.get_header_value("Content-Type"), req.body});
      res.status = out.status;
      res.set_content(std::move(out.body), out.contentType.c_str());
    });
    threadServer->route("POST", "/constant", [&constantBody](const httplib::Request&, httplib::Response& res) {
      res.set_content(constantBody, "application/json");
    });
    port = threadServer->start();
  }
  std::printf("server: %s, TLS on 127.0.0.1:%d, certificate %s, policy %s%s\n",
              flags.server == "event" ? ("EventServer, " + std::to_string(flags.serverThreads) + " loops").c_str()
                                      : "HttpServer (a thread per connection)",
              port, pki.keyType.c_str(), flags.policy.c_str(),
              flags.acceptGzip ? ", client sends Accept-Encoding: gzip" : "");

  std::vector<std::string> endpoints;
  const bool all = flags.endpoint == "all";
  if (all || flags.endpoint == "mutate" || flags.endpoint == "both") endpoints.push_back("mutate");
  if (all || flags.endpoint == "constant" || flags.endpoint == "both") endpoints.push_back("constant");
  std::unique_ptr<GoPeer> goPeer;
  if (all || flags.endpoint == "go") {
    goPeer = startGoPeer(flags.goPeer, pki.dir, pki.tlsCert, pki.tlsKey);
    if (goPeer) {
      endpoints.push_back("go");
      std::printf("go peer: %s on 127.0.0.1:%d, pid %d, its own process (GOMAXPROCS = CPUs)\n", flags.goPeer.c_str(),
                  goPeer->port, static_cast<int>(goPeer->pid));
    }
  }
  if (endpoints.empty()) throw std::runtime_error("no endpoint to load");

  // ---- connections ----
  mka::bench::ClientTls tls(pki.caCert.string(), "localhost");
  // Per server: the Go peer has its own port and connections.
  std::map<std::string, std::vector<std::unique_ptr<mka::bench::Connection>>> connectionsOf;
  for (const auto& endpoint : endpoints) {
    const int target = endpoint == "go" ? goPeer->port : port;
    const std::string key = endpoint == "go" ? "go" : "ours";
    auto& connections = connectionsOf[key];
    if (!connections.empty()) continue;
    const auto connectStart = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < flags.connections; ++i) {
      connections.push_back(std::make_unique<mka::bench::Connection>(tls, "127.0.0.1", target));
      std::string error;
      if (!connections.back()->open(error)) throw std::runtime_error("connection " + std::to_string(i) + ": " + error);
    }
    const double connectMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - connectStart).count();
    std::printf("client: %zu keep-alive connections to %s opened in %.1f ms (%s), one thread each\n", flags.connections,
                key == "go" ? "the Go peer" : "our server", connectMs, connections.front()->protocol().c_str());
  }
  auto connectionsFor = [&](const std::string& endpoint) -> auto& {
    return connectionsOf[endpoint == "go" ? "go" : "ours"];
  };
  auto pathOf = [](const std::string& endpoint) { return endpoint == "go" ? std::string("/mutate") : "/" + endpoint; };
  std::printf("phases: warmup %.1fs, closed-loop max %.1fs, open-loop %.0f req/s %.1fs (latency from scheduled time)\n",
              flags.warmup, flags.duration, flags.rate, flags.duration);

  // ---- phases ----
  const std::string hostHeader = "localhost:" + std::to_string(port);
  const auto duration =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(flags.duration));

  // One request per endpoint first: what the load generator will see.
  for (const auto& endpoint : endpoints) {
    mka::bench::HttpResult r;
    std::string error;
    const auto request = mka::bench::buildRequest(pathOf(endpoint), hostHeader, body, flags.acceptGzip);
    if (!connectionsFor(endpoint).front()->roundTrip(request, r, error))
      throw std::runtime_error(endpoint + ": " + error);
    std::printf("/%s over TLS: HTTP %d, %zu body bytes on the wire%s%s, %s\n", endpoint.c_str(), r.status,
                r.wireBodyBytes, r.contentEncoding.empty() ? "" : " (Content-Encoding: ",
                r.contentEncoding.empty() ? "" : (r.contentEncoding + ")").c_str(),
                r.serverCloses ? "server closes the connection (!)" : "connection kept alive");
  }
  std::printf("\n");

  std::vector<mka::bench::PhaseResult> results;
  printHeader();
  for (int round = 0; round < flags.rounds; ++round)
    for (const auto& endpoint : endpoints) {
      auto& connections = connectionsFor(endpoint);
      mka::bench::PhaseSpec spec;
      spec.endpoint = endpoint;
      spec.request = mka::bench::buildRequest(pathOf(endpoint), hostHeader, body, flags.acceptGzip);
      spec.expectPatch = true;  // all answer the same patched review
      if (endpoint == "go") spec.serverPid = goPeer->pid;
      if (flags.warmup > 0) {
        auto warm = spec;
        warm.duration =
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(flags.warmup));
        const auto w = mka::bench::runPhase(warm, connections);
        if (w.errors > 0)
          std::printf("!!! warmup on /%s: %llu errors, first: %s\n", endpoint.c_str(),
                      static_cast<unsigned long long>(w.errors), w.firstError.c_str());
      }
      if (flags.modes == "max" || flags.modes == "both") {
        spec.mode = mka::bench::Mode::ClosedLoop;
        spec.duration = duration;
        results.push_back(mka::bench::runPhase(spec, connections));
        printRow(results.back(), cpus);
        std::fflush(stdout);
        std::this_thread::sleep_for(200ms);
      }
      if (flags.modes == "rate" || flags.modes == "both") {
        spec.mode = mka::bench::Mode::OpenLoop;
        spec.duration = duration;
        spec.rate = flags.rate;
        results.push_back(mka::bench::runPhase(spec, connections));
        printRow(results.back(), cpus);
        std::fflush(stdout);
        std::this_thread::sleep_for(200ms);
      }
    }
  for (auto& [key, connections] : connectionsOf)
    for (auto& c : connections) c->close();
  if (eventServer) eventServer->stop();
  if (threadServer) threadServer->stop();
  goPeer.reset();
  certificates->stop();

  // ---- summary ----
  std::printf("\n");
  printHeader();
  std::uint64_t errors = 0, reconnects = 0;
  for (const auto& r : results) {
    printRow(r, cpus);
    errors += r.errors;
    reconnects += r.reconnects;
  }
  std::printf(
      "\nreq/s: completed requests per second (open loop: those scheduled in the window); latencies: closed loop\n"
      "from send to full response, open loop from the scheduled send time; srv_us/r and cli_us/r: CPU time per\n"
      "request of the server (process minus load-generator threads) and of the load generator; cpu: whole process\n"
      "CPU use as a share of the %d usable CPUs; other: CPU used by other processes meanwhile (should be ~0%%).\n"
      "Client and server share the machine.\n",
      cpus);
  for (const auto& r : results) {
    if (r.spec.mode != mka::bench::Mode::OpenLoop) continue;
    std::printf(
        "%-9s rate: load generator woke late by p50 %.3f ms, p99 %.3f ms, max %.3f ms (included in the latencies)\n",
        r.spec.endpoint.c_str(), mka::bench::percentileMs(r.sendLateNs, 0.5),
        mka::bench::percentileMs(r.sendLateNs, 0.99), mka::bench::percentileMs(r.sendLateNs, 1.0));
  }
  for (const auto& r : results) {
    if (r.seconds > 0 && r.otherCpuSeconds() > 0.1 * r.seconds * cpus) {
      std::printf("!! %s %s: other processes used %.0f%% of the CPUs during the phase: its figures are disturbed\n",
                  r.spec.endpoint.c_str(), r.spec.mode == mka::bench::Mode::ClosedLoop ? "max" : "rate",
                  100.0 * r.otherCpuSeconds() / (r.seconds * cpus));
    }
  }
  for (const auto& r : results) {
    if (r.spec.mode != mka::bench::Mode::ClosedLoop || r.ok == 0) continue;
    const double serverUs = r.serverCpuSeconds() / static_cast<double>(r.ok) * 1e6;
    if (serverUs > 0) {
      std::printf("%-9s server CPU %.1f us/request -> about %.0f req/s if the server had all %d CPUs to itself\n",
                  r.spec.endpoint.c_str(), serverUs, 1e6 * cpus / serverUs, cpus);
    }
  }
  printRatios(results);
  // The handler's own metrics must agree with what the load generator counted.
  std::istringstream rendered(metrics.render());
  for (std::string line; std::getline(rendered, line);) {
    if (line.rfind("multikueue_adapter_webhook_requests_total{", 0) == 0) std::printf("metrics: %s\n", line.c_str());
  }
  if (reconnects > 0) {
    std::printf("note: %llu reconnects (the server closed keep-alive connections)\n",
                static_cast<unsigned long long>(reconnects));
  }
  if (errors > 0) {
    std::printf("\n!!! %llu REQUESTS FAILED: the figures above are not valid.\n",
                static_cast<unsigned long long>(errors));
    for (const auto& r : results) {
      if (r.errors > 0) std::printf("!!! %s: first error: %s\n", r.spec.endpoint.c_str(), r.firstError.c_str());
    }
    return 1;
  }
  std::printf("no errors\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"webhook_bench: /mutate and a constant-answer ceiling over TLS keep-alive"};
  app.add_option("--connections", flags.connections, "keep-alive TLS connections, one client thread each")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--duration", flags.duration, "seconds per measured phase")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rate", flags.rate, "open-loop phase: requests per second over all connections")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", flags.warmup, "seconds of unmeasured load per endpoint")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--endpoint", flags.endpoint, "which endpoint(s) to load")
      ->check(CLI::IsMember({"mutate", "constant", "go", "both", "all"}))
      ->capture_default_str();
  app.add_option("--modes", flags.modes, "max = closed loop, rate = open loop at --rate")
      ->check(CLI::IsMember({"max", "rate", "both"}))
      ->capture_default_str();
  app.add_option("--body", flags.body, "AdmissionReview JSON file to send (default: the 2.5 KB fixture)")
      ->check(CLI::ExistingFile);
  app.add_option("--policy", flags.policy, "managedByDefaulting policy of the served configuration")
      ->check(CLI::IsMember({"QueueLabeled", "MultiKueueQueues"}))
      ->capture_default_str();
  app.add_option("--server", flags.server,
                 "event = EventServer as `serve` runs it; httplib = the thread-per-connection HttpServer")
      ->check(CLI::IsMember({"event", "httplib"}))
      ->capture_default_str();
  app.add_option("--server-threads", flags.serverThreads, "EventServer loops (default: as `serve` runs them)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--go-peer", flags.goPeer, "directory of the Go peer's source (built with `go build`); empty: no peer")
      ->capture_default_str();
  app.add_option("--rounds", flags.rounds, "rounds over the endpoints, alternating (ratios per round)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_flag("--accept-gzip", flags.acceptGzip, "send Accept-Encoding: gzip (as Go's HTTP client does by default)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "webhook_bench: %s\n", e.what());
    return 1;
  }
}
