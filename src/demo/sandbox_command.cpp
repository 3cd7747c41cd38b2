// sandboxCommand(): emulated clusters until SIGTERM/SIGINT.
#include "mka/demo/sandbox_command.h"

#include <algorithm>
#include <ostream>
#include <set>

#include "mka/app/signals.h"
#include "mka/common/errors.h"
#include "mka/common/log.h"
#include "mka/sandbox/sandbox.h"

namespace mka::demo {

namespace fs = std::filesystem;
using app::blockStopSignals;
using app::waitForStopSignal;

std::optional<fs::path> defaultCrdDirectory(const fs::path& cwd) {
  for (const fs::path& candidate : {cwd / ".." / "shared" / "crds", cwd / "test" / "fixtures" / "crds"}) {
    std::error_code ec;
    if (fs::is_directory(candidate, ec)) return candidate.lexically_normal();
  }
  return std::nullopt;
}

std::vector<fs::path> crdFilesFrom(const std::vector<fs::path>& paths) {
  std::vector<fs::path> out;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      out.push_back(path);
      continue;
    }
    if (!fs::is_directory(path, ec)) {
      throw Error("--crds " + path.string() + ": no such file or directory: give CRD manifest files or directories");
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      const auto ext = entry.path().extension();
      if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path());
    }
    if (ec) throw Error("--crds " + path.string() + ": cannot list the directory: " + ec.message());
    if (files.empty()) throw Error("--crds " + path.string() + ": the directory holds no *.yaml or *.yml file");
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

int sandboxCommand(const SandboxCommandOptions& options, std::ostream& out) {
  blockStopSignals();  // as serve(): before any thread starts

  try {
    std::vector<fs::path> crdFiles;
    if (!options.noCrds) {
      std::vector<fs::path> sources = options.crds;
      if (sources.empty()) {
        if (auto dir = defaultCrdDirectory(fs::current_path())) {
          sources.push_back(*dir);
        } else {
          log::warn(
              "no CRDs loaded: neither ../shared/crds nor test/fixtures/crds exists here; pass --crds FILE_OR_DIR, or "
              "--no-crds to silence this");
        }
      }
      crdFiles = crdFilesFrom(sources);
    }
    std::set<std::string> seen;
    for (const auto& name : options.clusters) {
      if (!seen.insert(name).second) {
        throw Error("--clusters: \"" + name + "\" is listed twice: give each cluster its own name");
      }
    }
    if (options.clusters.empty()) throw Error("--clusters: name at least one cluster, e.g. manager,worker1");

    sandbox::Sandbox sandbox;
    for (const auto& name : options.clusters) {
      sandbox::ClusterOptions cluster;
      cluster.name = name;
      cluster.host = options.host;
      cluster.crdFiles = crdFiles;
      cluster.watchHistory = options.watchHistory;
      sandbox.addCluster(cluster);
    }
    const auto kubeconfigs = sandbox.writeKubeconfigs(options.dir);
    for (const auto& name : options.clusters) {
      const auto& cluster = sandbox.cluster(name);
      const fs::path file = fs::absolute(kubeconfigs.at(name));
      log::info("sandbox cluster ready", {{"cluster", name},
                                          {"server", cluster.server()},
                                          {"kubeconfig", file.string()},
                                          {"crdFiles", crdFiles.size()}});
      out << name << ' ' << file.string() << ' ' << cluster.server() << '\n';
    }
    out.flush();

    log::info("received signal, stopping the sandbox", {{"signal", waitForStopSignal()}});
    sandbox.stop();
    return 0;
  } catch (const std::exception& e) {
    log::error("sandbox cannot start", {{"error", e.what()}});
    return 1;
  }
}

}  // namespace mka::demo
