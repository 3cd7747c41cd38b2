#pragma once
// client-go's exec credential protocol (k8s.io/client-go/plugin/pkg/client/auth/exec): a
// program prints an ExecCredential whose status holds a bearer token or a client certificate
// and key, valid until an optional expirationTimestamp. The program gets the adapter's own
// environment plus the configured variables, and KUBERNETES_EXEC_INFO: an ExecCredential whose
// spec says it is not interactive and, with provideClusterInfo, which cluster it is for.
//
// Threads: runExecPlugin runs on the caller's thread; ExecCredentialSource may be called from
// any thread (one plugin run at a time, the others wait for its result).

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mka/api/exec_config.h"
#include "mka/common/clock.h"

namespace mka::kube {

// What KUBERNETES_EXEC_INFO's spec.cluster carries when provideClusterInfo is set.
struct ExecClusterInfo {
  std::string server;
  std::string tlsServerName;
  std::string certificateAuthorityPem;
  std::string proxyUrl;
  // The cluster's `client.authentication.k8s.io/exec` extension: per-cluster data for the
  // plugin (null: none).
  nlohmann::json config;
};

struct ExecCredential {
  std::string token;
  std::string clientCertificatePem, clientKeyPem;
  std::optional<Clock::TimePoint> expiration;  // nullopt: valid until the server refuses it
};

// Runs the plugin once and returns what it printed. Throws mka::Error with client-go's words
// ("exec: executable cp-creds failed with exit code 1: <stderr>", "exec: executable x not
// found", "exec plugin is configured to use API version ..."); a plugin still running after
// `timeout` is killed and reported.
ExecCredential runExecPlugin(const api::ExecConfig& config, const ExecClusterInfo& cluster,
                             std::chrono::milliseconds timeout = std::chrono::seconds{30});

// A bearer token or client certificate for every request to one cluster.
class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // The credential to use now. Throws mka::Error when none can be had.
  virtual ExecCredential current() = 0;
  // The server refused `used` (401): the next current() fetches a new one unless another
  // thread already did.
  virtual void refused(const ExecCredential& used) = 0;
};

// Runs the plugin when there is no credential yet, when the server refused the one it has,
// and ahead of its expirationTimestamp: once a fifth of its lifetime (at most a minute) is
// left, so requests never carry an expired token. A failed refresh keeps a credential that
// has not expired yet (and tries again at the next call).
class ExecCredentialSource final : public CredentialSource {
 public:
  using Runner = std::function<ExecCredential()>;
  ExecCredentialSource(api::ExecConfig config, ExecClusterInfo cluster, const Clock& clock);
  // Tests: `run` in place of the plugin.
  ExecCredentialSource(Runner run, const Clock& clock);

  ExecCredential current() override;
  void refused(const ExecCredential& used) override;
  int runs() const;  // plugin runs so far (tests, logs)

 private:
  bool fresh(Clock::TimePoint now) const;  // under mutex_

  Runner run_;
  const Clock& clock_;
  mutable std::mutex mutex_;
  std::optional<ExecCredential> cached_;
  Clock::TimePoint obtainedAt_{};
  int runs_ = 0;
};

}  // namespace mka::kube
