#pragma once
// The `sandbox` subcommand: emulated clusters (see mka/sandbox/sandbox.h) served until
// SIGTERM/SIGINT, with a kubeconfig per cluster for kubectl and for the adapter.
//
// Threads: sandboxCommand() runs on the main thread; the clusters serve on their own threads.

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace mka::demo {

struct SandboxCommandOptions {
  std::filesystem::path dir;  // where <cluster>.kubeconfig files go (created if missing)
  std::vector<std::string> clusters = {"manager", "worker1", "worker2"};
  std::vector<std::filesystem::path> crds;  // CRD files or directories; empty = the defaults
  bool noCrds = false;                      // start with the built-in kinds only
  std::string host = "127.0.0.1";
  std::size_t watchHistory = 1000;  // events each cluster keeps for watch resume before 410 Gone
};

// The CRD directory used without --crds: ../shared/crds (Kueue, Tekton and Argo, as laid out
// next to a development checkout), else test/fixtures/crds (running from a checkout), both
// relative to `cwd`; nullopt when neither exists.
std::optional<std::filesystem::path> defaultCrdDirectory(const std::filesystem::path& cwd);

// Files stay as given; a directory contributes its *.yaml and *.yml files, sorted by name.
// Throws mka::Error naming a path that does not exist or a directory without YAML files.
std::vector<std::filesystem::path> crdFilesFrom(const std::vector<std::filesystem::path>& paths);

// Starts the clusters, writes their kubeconfigs, prints one line per cluster to `out`
// ("<cluster> <kubeconfig path> <server>"), serves until SIGTERM or SIGINT and returns the exit
// code: 0 after a signal, 1 when the clusters cannot start.
int sandboxCommand(const SandboxCommandOptions& options, std::ostream& out);

}  // namespace mka::demo
