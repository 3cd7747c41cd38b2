#pragma once
// A sandbox manager for the placement tests (never a mock of the client): Kueue's
// AdmissionChecks, MultiKueueConfigs, MultiKueueClusters and Workloads, OCM's Placements and
// PlacementDecisions, the kueue-system namespace; a client, a reader through it, a FakeClock,
// and helpers that write Placements, decisions and Workloads and read what the check wrote.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/controller/object_reader.h"
#include "mka/kube/client.h"
#include "mka/kube/kubeconfig.h"
#include "mka/placement/api.h"
#include "mka/placement/placement_check_reconciler.h"
#include "mka/sandbox/sandbox.h"

namespace mka::placement::fixture {

using nlohmann::json;

inline const std::filesystem::path kCrds = std::filesystem::path(MKA_FIXTURES_DIR) / "crds";
inline const sandbox::ResourceRef kNamespaces{"", "v1", "namespaces", "", "", ""};
inline const sandbox::ResourceRef kChecks{"kueue.x-k8s.io", "v1beta2", "admissionchecks", "", "", ""};
inline const sandbox::ResourceRef kConfigs{"kueue.x-k8s.io", "v1beta2", "multikueueconfigs", "", "", ""};
inline const sandbox::ResourceRef kClusters{"kueue.x-k8s.io", "v1beta2", "multikueueclusters", "", "", ""};
inline const sandbox::ResourceRef kPlacements{
    "cluster.open-cluster-management.io", "v1beta1", "placements", "kueue-system", "", ""};
inline const sandbox::ResourceRef kDecisions{
    "cluster.open-cluster-management.io", "v1beta1", "placementdecisions", "kueue-system", "", ""};
inline const sandbox::ResourceRef kWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads", "default", "", ""};

inline sandbox::ResourceRef named(sandbox::ResourceRef ref, const std::string& name) {
  ref.name = name;
  return ref;
}

inline json placementCheck(const std::string& name, const std::string& placement) {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "AdmissionCheck"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"controllerName", std::string(kControllerName)},
            {"parameters",
             {{"apiGroup", "cluster.open-cluster-management.io"}, {"kind", "Placement"}, {"name", placement}}}}}};
}

class PlacementSandbox : public ::testing::Test {
 protected:
  PlacementSandbox()
      : manager(sandbox.addCluster(
            {.name = "manager",
             .crdFiles = {kCrds / "kueue.x-k8s.io_multikueueclusters.yaml",
                          kCrds / "kueue.x-k8s.io_multikueueconfigs.yaml",
                          kCrds / "kueue.x-k8s.io_admissionchecks.yaml", kCrds / "kueue.x-k8s.io_workloads.yaml",
                          kCrds / "cluster.open-cluster-management.io_placements.yaml",
                          kCrds / "cluster.open-cluster-management.io_placementdecisions.yaml"}})) {
    manager.api().create(kNamespaces, {{"metadata", {{"name", "kueue-system"}}}});
    kube::ClientOptions fast;
    fast.qps = 0;
    fast.maxRetries = 0;
    client = std::make_unique<kube::Client>(
        std::make_shared<kube::RestClient>(kube::restConfigFor(kube::Kubeconfig::parse(manager.kubeconfig())), fast));
    reader = std::make_unique<controller::ClientReader>(*client);
  }

  PlacementCheckReconciler reconciler(bool profiles = false) {
    return PlacementCheckReconciler(*client, *reader, clock, {"kueue-system", profiles});
  }
  // Reconciles until a pass writes nothing (the first adds the finalizer), at most 5 passes.
  void converge(PlacementCheckReconciler& r, const std::string& check) {
    for (int i = 0; i < 5; ++i) {
      const auto before = manager.api().list(kChecks, {})["metadata"].value("resourceVersion", "");
      r.reconcile(check);
      if (manager.api().list(kChecks, {})["metadata"].value("resourceVersion", "") == before) return;
    }
  }
  void placement(const std::string& name) {
    manager.api().create(kPlacements, {{"apiVersion", "cluster.open-cluster-management.io/v1beta1"},
                                       {"kind", "Placement"},
                                       {"metadata", {{"name", name}, {"namespace", "kueue-system"}}},
                                       {"spec", json::object()}});
  }
  void decision(const std::string& placement, int index, const std::vector<std::string>& clusters) {
    json decisions = json::array();
    for (const auto& c : clusters) decisions.push_back({{"clusterName", c}, {"reason", ""}});
    const auto name = placement + "-decision-" + std::to_string(index);
    json object = {
        {"apiVersion", "cluster.open-cluster-management.io/v1beta1"},
        {"kind", "PlacementDecision"},
        {"metadata",
         {{"name", name},
          {"namespace", "kueue-system"},
          {"labels", {{std::string(kPlacementLabel), placement}, {std::string(kDecisionGroupIndexLabel), "0"}}}}}};
    try {
      object = manager.api().get(named(kDecisions, name));
    } catch (const std::exception&) {
      object = *manager.api().create(kDecisions, object);
    }
    object["status"] = {{"decisions", decisions}};
    auto ref = named(kDecisions, name);
    ref.subresource = "status";
    manager.api().update(ref, object);
  }
  // The Workload `name` in namespace default with `status` (created, or its status replaced).
  void putWorkload(const std::string& name, const json& status) {
    json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
               {"kind", "Workload"},
               {"metadata", {{"name", name}, {"namespace", "default"}}},
               {"spec",
                {{"queueName", "q"},
                 {"podSets",
                  {{{"name", "main"},
                    {"count", 1},
                    {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}}}}}}}}};
    try {
      wl = *manager.api().create(kWorkloads, wl);
    } catch (const std::exception&) {
      wl = manager.api().get(named(kWorkloads, name));
    }
    wl["status"] = status;
    auto ref = named(kWorkloads, name);
    ref.subresource = "status";
    manager.api().update(ref, wl);
  }
  json active(const std::string& check) {
    const auto object = manager.api().get(named(kChecks, check));
    for (const auto& c : object.value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == "Active") return c;
    return nullptr;
  }
  std::vector<std::string> clusterNames() {
    std::vector<std::string> out;
    const auto list = manager.api().list(kClusters, {});
    for (const auto& c : list["items"]) out.push_back(c["metadata"]["name"]);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> configClusters(const std::string& name) {
    return manager.api().get(named(kConfigs, name))["spec"]["clusters"].get<std::vector<std::string>>();
  }
  bool exists(const sandbox::ResourceRef& ref) {
    try {
      manager.api().get(ref);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  FakeClock clock;
  sandbox::Sandbox sandbox;
  sandbox::Cluster& manager;
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<controller::ClientReader> reader;
};

}  // namespace mka::placement::fixture
