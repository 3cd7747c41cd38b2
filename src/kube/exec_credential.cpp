#include "mka/kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>
#include <vector>

#include "mka/common/base64.h"
#include "mka/common/errors.h"
#include "mka/common/log.h"
#include "mka/common/strings.h"
#include "mka/common/unique_fd.h"

extern char** environ;

namespace mka::kube {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Beyond these the plugin is misbehaving; a credential is a few KiB.
constexpr std::size_t kMaxStdout = 1 << 20;
constexpr std::size_t kKeptStderr = 2048;
// The share of a credential's lifetime left when it is refreshed, and the most ever left.
constexpr int kRefreshFraction = 5;
constexpr std::chrono::seconds kMaxRefreshLead{60};

struct Finished {
  int exitCode = -1;  // -1: killed by a signal
  int signal = 0;
  bool timedOut = false;
  std::string out, err;
};

std::pair<UniqueFd, UniqueFd> makePipe() {
  int fds[2];
  // O_CLOEXEC: a plugin started by another thread at the same time must not inherit this end.
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// The adapter's environment with `extra` set over it (client-go appends the configured
// variables to os.Environ(), and the last value of a name wins).
std::vector<std::string> environmentWith(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    names[entry.substr(0, entry.find('='))] = std::move(entry);
  }
  for (const auto& [name, value] : extra) names[name] = name + "=" + value;
  std::vector<std::string> out;
  out.reserve(names.size());
  for (auto& [name, entry] : names) out.push_back(std::move(entry));
  return out;
}

// Spawns `argv` with `env`, stdin from /dev/null (the adapter has no terminal to offer), and
// collects stdout and stderr until it exits or `timeout` passes.
Finished runProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                    std::chrono::milliseconds timeout) {
  auto [outRead, outWrite] = makePipe();
  auto [errRead, errWrite] = makePipe();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, outWrite.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, errWrite.get(), 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // The adapter blocks SIGPIPE on some threads; the plugin starts with default signals.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) throw std::system_error(spawned, std::generic_category());
  outWrite.reset();
  errWrite.reset();

  Finished done;
  const auto deadline = SteadyClock::now() + timeout;
  std::vector<pollfd> fds = {{outRead.get(), POLLIN, 0}, {errRead.get(), POLLIN, 0}};
  int open = 2;
  char buffer[4096];
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) {
      done.timedOut = true;
      break;
    }
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw std::system_error(errno, std::generic_category(), "poll");
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const auto n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;  // poll skips negative descriptors
        --open;
        continue;
      }
      auto& sink = i == 0 ? done.out : done.err;
      sink.append(buffer, static_cast<std::size_t>(n));
      if (i == 1 && sink.size() > 2 * kKeptStderr) sink.erase(0, sink.size() - kKeptStderr);
      if (i == 0 && sink.size() > kMaxStdout) {
        done.timedOut = false;
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        throw Error("exec: executable " + argv[0] + " printed more than 1 MiB: an ExecCredential is a few KiB");
      }
    }
  }
  if (done.timedOut) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) done.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) done.signal = WTERMSIG(status);
  if (done.err.size() > kKeptStderr) done.err.erase(0, done.err.size() - kKeptStderr);
  return done;
}

json execInfo(const api::ExecConfig& config, const ExecClusterInfo& cluster) {
  json spec = {{"interactive", false}};
  if (config.provideClusterInfo) {
    json c = {{"server", cluster.server}};
    if (!cluster.tlsServerName.empty()) c["tls-server-name"] = cluster.tlsServerName;
    if (!cluster.certificateAuthorityPem.empty())
      c["certificate-authority-data"] = base64Encode(cluster.certificateAuthorityPem);
    if (!cluster.proxyUrl.empty()) c["proxy-url"] = cluster.proxyUrl;
    if (!cluster.config.is_null()) c["config"] = cluster.config;
    spec["cluster"] = std::move(c);
  }
  return {{"kind", "ExecCredential"}, {"apiVersion", config.apiVersion}, {"spec", std::move(spec)}};
}

std::string stderrSuffix(const std::string& err) {
  const auto trimmed = strings::trim(err);
  return trimmed.empty() ? "" : ": " + std::string(trimmed);
}

ExecCredential decode(const api::ExecConfig& config, const std::string& out) {
  json doc;
  try {
    doc = json::parse(out);
  } catch (const json::exception& e) {
    throw Error("exec: decoding stdout: " + std::string(e.what()) + " (the plugin must print one ExecCredential)");
  }
  if (!doc.is_object()) throw Error("exec: decoding stdout: not a JSON object");
  const auto apiVersion = doc.value("apiVersion", "");
  if (apiVersion != config.apiVersion)
    throw Error("exec plugin is configured to use API version " + config.apiVersion + ", plugin returned version " +
                (apiVersion.empty() ? std::string("\"\"") : apiVersion));
  if (doc.value("kind", "") != "ExecCredential")
    throw Error("exec: decoding stdout: kind " + json(doc.value("kind", "")).dump() + ", not ExecCredential");
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) throw Error("exec plugin didn't return a status field");
  ExecCredential c;
  const auto text = [&](const char* key) {
    const auto it = status->find(key);
    if (it == status->end() || it->is_null()) return std::string();
    if (!it->is_string()) throw Error(std::string("exec: decoding stdout: status.") + key + " is not a string");
    return it->get<std::string>();
  };
  c.token = text("token");
  c.clientCertificatePem = text("clientCertificateData");
  c.clientKeyPem = text("clientKeyData");
  if (const auto expiry = text("expirationTimestamp"); !expiry.empty()) {
    c.expiration = parseRfc3339(expiry);
    if (!c.expiration)
      throw Error("exec: decoding stdout: status.expirationTimestamp " + json(expiry).dump() +
                  " is not an RFC 3339 time");
  }
  if (c.clientCertificatePem.empty() != c.clientKeyPem.empty())
    throw Error("exec plugin returned only certificate or key, not both");
  if (c.token.empty() && c.clientCertificatePem.empty())
    throw Error("exec plugin didn't return a token or cert/key pair");
  return c;
}

}  // namespace

ExecCredential runExecPlugin(const api::ExecConfig& config, const ExecClusterInfo& cluster,
                             std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {config.command};
  argv.insert(argv.end(), config.args.begin(), config.args.end());
  std::vector<std::pair<std::string, std::string>> extra;
  for (const auto& e : config.env) extra.emplace_back(e.name, e.value);
  extra.emplace_back("KUBERNETES_EXEC_INFO", execInfo(config, cluster).dump());

  Finished done;
  try {
    done = runProcess(argv, environmentWith(extra), timeout);
  } catch (const std::system_error& e) {
    if (e.code().value() == ENOENT) {
      std::string message = "exec: executable " + config.command + " not found";
      if (!config.installHint.empty()) message += ": " + config.installHint;
      throw Error(message);
    }
    throw Error("exec: executable " + config.command + " could not be started: " + e.code().message());
  }
  if (done.timedOut)
    throw Error("exec: executable " + config.command + " did not finish within " +
                (timeout % std::chrono::seconds{1} == std::chrono::milliseconds{0}
                     ? std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s"
                     : std::to_string(timeout.count()) + " ms") +
                " and was killed" + stderrSuffix(done.err));
  if (done.signal != 0)
    throw Error("exec: executable " + config.command + " was killed by signal " + std::to_string(done.signal) +
                stderrSuffix(done.err));
  if (done.exitCode != 0)
    throw Error("exec: executable " + config.command + " failed with exit code " + std::to_string(done.exitCode) +
                stderrSuffix(done.err));
  return decode(config, done.out);
}

ExecCredentialSource::ExecCredentialSource(api::ExecConfig config, ExecClusterInfo cluster, const Clock& clock)
    : ExecCredentialSource(
          [config = std::move(config), cluster = std::move(cluster)] { return runExecPlugin(config, cluster); },
          clock) {}

ExecCredentialSource::ExecCredentialSource(Runner run, const Clock& clock) : run_(std::move(run)), clock_(clock) {}

bool ExecCredentialSource::fresh(Clock::TimePoint now) const {
  if (!cached_) return false;
  if (!cached_->expiration) return true;
  const auto lifetime = *cached_->expiration - obtainedAt_;
  const auto lead = std::min<Clock::TimePoint::duration>(lifetime / kRefreshFraction, kMaxRefreshLead);
  return now < *cached_->expiration - lead;
}

ExecCredential ExecCredentialSource::current() {
  std::lock_guard lock(mutex_);
  const auto now = clock_.now();
  if (fresh(now)) return *cached_;
  try {
    ++runs_;
    cached_ = run_();
    obtainedAt_ = now;
    return *cached_;
  } catch (const Error& e) {
    // A credential that has not expired still works: keep it, and try again next time.
    if (cached_ && cached_->expiration && now < *cached_->expiration) {
      log::warn("exec credential plugin failed, the current credential is kept until it expires",
                {{"error", e.what()}, {"expires", toRfc3339(*cached_->expiration)}});
      return *cached_;
    }
    cached_.reset();
    throw;
  }
}

void ExecCredentialSource::refused(const ExecCredential& used) {
  std::lock_guard lock(mutex_);
  if (cached_ && cached_->token == used.token && cached_->clientCertificatePem == used.clientCertificatePem)
    cached_.reset();
}

int ExecCredentialSource::runs() const {
  std::lock_guard lock(mutex_);
  return runs_;
}

}  // namespace mka::kube
