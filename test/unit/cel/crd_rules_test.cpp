// Every x-kubernetes-validations rule of the CRDs the sandbox loads compiles, and each distinct
// rule text is evaluated on a `self` (and `oldSelf` for a transition rule) that satisfies it
// and one that violates it. The table is keyed by the exact rule text: a CRD that gains or
// changes a rule fails here, naming the rule, until a case is added for it.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mka/cel/cel.h"
#include "mka/yaml/json.h"
#include "support/table_test.h"

namespace mka::cel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct FoundRule {
  std::string rule;
  std::string messageExpression;  // "" when the rule has none
  std::string where;              // file and JSON path, for messages
};

void collectRules(const json& node, const std::string& where, std::vector<FoundRule>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key == "x-kubernetes-validations" && value.is_array()) {
        for (const auto& rule : value)
          out.push_back({rule.at("rule").get<std::string>(), rule.value("messageExpression", ""), where});
      } else {
        collectRules(value, where + "/" + key, out);
      }
    }
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) collectRules(node[i], where + "/" + std::to_string(i), out);
  }
}

// The CRDs of test/fixtures/crds (the set the demo loads) and test/fixtures/crds/cel (the
// others with rules), and those of ../shared/crds when present, which the sandbox loads by
// default; a file in both places is read from the shared folder.
std::map<std::string, fs::path> crdFiles() {
  std::map<std::string, fs::path> files;
  const fs::path fixtures = fs::path(MKA_FIXTURES_DIR) / "crds";
  for (const auto& dir : {fixtures, fixtures / "cel", fs::path(MKA_SOURCE_DIR) / ".." / "shared" / "crds"}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".yaml") files[entry.path().filename().string()] = entry.path();
  }
  return files;
}

const std::vector<FoundRule>& allRules() {
  static const std::vector<FoundRule> rules = [] {
    std::vector<FoundRule> out;
    for (const auto& [name, path] : crdFiles()) {
      std::ifstream in(path, std::ios::binary);
      const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (!in) throw Error("cannot read " + path.string());
      const auto documents = yaml::parseJson(text, yaml::Limits::forManifests());
      for (std::size_t d = 0; d < documents.size(); ++d)
        collectRules(documents[d], name + "#" + std::to_string(d), out);
    }
    return out;
  }();
  return rules;
}

// The variables of a case: {"self": ..., "oldSelf": ...}.
json evaluateWith(const Program& program, const json& variables) {
  Activation activation;
  for (const auto& [name, value] : variables.items()) activation.variables[name] = &value;
  return program.evaluate(activation);
}

json vars(const char* text) { return json::parse(text); }

// A Workload with `spec` whose status has the condition `type` True (none when empty).
json workload(json spec, const std::string& condition = "QuotaReserved") {
  json w = {{"spec", std::move(spec)}};
  if (!condition.empty()) w["status"] = {{"conditions", {{{"type", condition}, {"status", "True"}}}}};
  return w;
}
json transition(json self, json oldSelf) { return {{"self", std::move(self)}, {"oldSelf", std::move(oldSelf)}}; }

struct RuleCase {
  std::string rule;
  json valid;             // variables under which the rule holds
  json invalid;           // variables under which it does not
  std::string name = "";  // its rule; set by ruleCases()
};

// The cases, each named by its rule; a name an earlier case took gets _2, _3... (a rule given
// two cases is reported by EveryDistinctRuleHasOneCase, not refused when the tests are listed).
std::vector<RuleCase> namedByRule(std::vector<RuleCase> cases) {
  std::set<std::string> taken;
  for (auto& c : cases) {
    const std::string base = test::caseName(c.rule);
    c.name = base;
    for (int n = 2; !taken.insert(c.name).second; ++n) c.name = base + "_" + std::to_string(n);
  }
  return cases;
}

const std::vector<RuleCase>& ruleCases() {
  static const std::vector<RuleCase> cases = namedByRule({
      // ---- Argo Workflows (argoproj.io_workflows.full.yaml)
      {"(has(self.s3) ? 1 : 0) + (has(self.git) ? 1 : 0) + (has(self.http) ? 1 : 0) + (has(self.artifactory) ? 1 : "
       "0) + (has(self.hdfs) ? 1 : 0) + (has(self.raw) ? 1 : 0) + (has(self.oss) ? 1 : 0) + (has(self.gcs) ? 1 : 0) + "
       "(has(self.azure) ? 1 : 0) + (has(self.plugin) ? 1 : 0) <= 1",
       vars(R"({"self": {"name": "out", "s3": {"key": "k"}}})"),
       vars(R"({"self": {"name": "out", "s3": {"key": "k"}, "azure": {"blob": "b"}}})")},
      {"!has(self.realtime) || !self.realtime || !self.value.contains('resourcesDuration.')",
       vars(R"({"self": {"realtime": true, "value": "{{workflow.duration}}"}})"),
       vars(R"({"self": {"realtime": true, "value": "{{resourcesDuration.cpu}}"}})")},
      {"!(has(self.count) && has(self.end))", vars(R"({"self": {"count": "3"}})"),
       vars(R"({"self": {"count": "3", "end": "5"}})")},
      {"!has(self.depends) || !has(self.dependencies)", vars(R"({"self": {"name": "b", "depends": "a"}})"),
       vars(R"({"self": {"name": "b", "depends": "a", "dependencies": ["a"]}})")},
      {"!has(self.depends) || !has(self.continueOn)", vars(R"({"self": {"name": "b", "depends": "a"}})"),
       vars(R"({"self": {"name": "b", "depends": "a", "continueOn": {"failed": true}}})")},
      {"!(has(self.depends) || has(self.dependencies)) || !self.name.matches('^[0-9]')",
       vars(R"({"self": {"name": "step1", "depends": "a"}})"),
       vars(R"({"self": {"name": "1step", "dependencies": ["a"]}})")},
      {"(has(self.manifest) && !has(self.manifestFrom)) || (!has(self.manifest) && has(self.manifestFrom)) || "
       "(!has(self.manifest) && !has(self.manifestFrom))",
       vars(R"({"self": {"action": "create", "manifestFrom": {"artifact": {"name": "m"}}}})"),
       vars(R"({"self": {"action": "create", "manifest": "kind: Pod", "manifestFrom": {"artifact": {"name": "m"}}}})")},
      {"self.all(t, (has(t.container) ? 1 : 0) + (has(t.script) ? 1 : 0) + (has(t.dag) ? 1 : 0) + (has(t.steps) ? 1 : "
       "0) + (has(t.resource) ? 1 : 0) + (has(t.suspend) ? 1 : 0) + (has(t.containerSet) ? 1 : 0) + (has(t.data) ? 1 : "
       "0) + (has(t.http) ? 1 : 0) + (has(t.plugin) ? 1 : 0) <= 1)",
       vars(R"({"self": [{"name": "a", "container": {"image": "i"}}, {"name": "b", "steps": []}, {"name": "c"}]})"),
       vars(R"({"self": [{"name": "a", "container": {"image": "i"}}, {"name": "b", "dag": {}, "suspend": {}}]})")},
      {"self.all(t, !(has(t.timeout) && t.timeout != \"\" && (has(t.steps) || has(t.dag))))",
       vars(R"({"self": [{"name": "a", "timeout": "10s", "container": {}}, {"name": "b", "timeout": "", "dag": {}}]})"),
       vars(R"({"self": [{"name": "a", "container": {}}, {"name": "b", "timeout": "10s", "steps": []}]})")},
      {"self.all(t, !(has(t.activeDeadlineSeconds) && (has(t.steps) || has(t.dag))))",
       vars(R"({"self": [{"name": "a", "activeDeadlineSeconds": 5, "script": {}}]})"),
       vars(R"({"self": [{"name": "a", "activeDeadlineSeconds": 5, "dag": {}}]})")},

      // ---- Kueue and ClusterProfile
      {"self == oldSelf", vars(R"({"self": "kueue.x-k8s.io/multikueue", "oldSelf": "kueue.x-k8s.io/multikueue"})"),
       vars(R"({"self": "example.com/other", "oldSelf": "kueue.x-k8s.io/multikueue"})")},
      {"!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
       vars(R"({"self": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                         "preference": "BorrowingOverPreemption"}})"),
       vars(R"({"self": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor",
                         "preference": "BorrowingOverPreemption"}})")},
      {"!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  self.borrowWithinCohort.policy != "
       "'Never')",
       vars(R"({"self": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"}}})"),
       vars(R"({"self": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}})")},
      {"self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
       vars(R"({"self": {"coveredResources": ["cpu", "memory"],
                         "flavors": [{"name": "f", "resources": [{"name": "cpu"}, {"name": "memory"}]}]}})"),
       vars(R"({"self": {"coveredResources": ["cpu", "memory"],
                         "flavors": [{"name": "f", "resources": [{"name": "cpu"}]}]}})")},
      {"!has(self.cohort) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, "
       "f.resources.all(r, !has(r.borrowingLimit)))) : true",
       vars(R"({"self": {"resourceGroups": [{"flavors": [{"resources": [{"name": "cpu", "nominalQuota": 1}]}]}]}})"),
       vars(R"({"self": {"resourceGroups": [{"flavors": [{"resources": [{"name": "cpu", "nominalQuota": 1,
                                                                         "borrowingLimit": 1}]}]}]}})")},
      {"!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, "
       "f.resources.all(r, !has(r.borrowingLimit)))) : true",
       vars(
           R"({"self": {"cohortName": "c", "resourceGroups": [{"flavors": [{"resources": [{"borrowingLimit": 1}]}]}]}})"),
       vars(R"({"self": {"resourceGroups": [{"flavors": [{"resources": [{"borrowingLimit": 1}]}]}]}})")},
      {"[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
       vars(R"({"self": {"clusterProfileRef": {"name": "worker"}}})"),
       vars(R"({"self": {"kubeConfig": {"location": "s"}, "clusterProfileRef": {"name": "worker"}}})")},
      {"size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", vars(R"({"self": ["worker1", "worker2"]})"),
       vars(R"({"self": ["worker1", "worker2", "worker1"]})")},
      {"self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
       vars(R"({"self": [{"key": "k", "value": "v", "effect": "NoSchedule"}]})"),
       vars(R"({"self": [{"key": "k", "value": "v", "effect": "Sometimes"}]})")},
      {"self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
       vars(R"({"self": [{"operator": "Exists"}, {"key": "k", "operator": "Equal", "value": "v"}]})"),
       vars(R"({"self": [{"operator": "Equal", "value": "v"}]})")},
      {"self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
       vars(R"({"self": [{"key": "k", "effect": "NoExecute", "tolerationSeconds": 30}, {"key": "j"}]})"),
       vars(R"({"self": [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 30}]})")},
      {"self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
       vars(R"({"self": [{"key": "k"}, {"key": "j", "operator": "Exists"}]})"),
       vars(R"({"self": [{"key": "k", "operator": "In"}]})")},
      {"self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
       vars(R"({"self": [{"key": "k", "operator": "Exists"}, {"key": "j", "operator": "Equal", "value": "v"}]})"),
       vars(R"({"self": [{"key": "k", "operator": "Exists", "value": "v"}]})")},
      {"self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
       vars(R"({"self": [{"key": "k"}, {"key": "j", "effect": "PreferNoSchedule"}]})"),
       vars(R"({"self": [{"key": "k", "effect": "Never"}]})")},
      {"!has(self.topologyName) || self.nodeLabels.size() >= 1",
       vars(R"({"self": {"topologyName": "default", "nodeLabels": {"pool": "a"}}})"),
       vars(R"({"self": {"topologyName": "default", "nodeLabels": {}}})")},
      {"!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)",
       vars(R"({"self": {"topologyName": "default"}, "oldSelf": {"topologyName": "default"}})"),
       vars(R"({"self": {"nodeLabels": {"pool": "a"}}, "oldSelf": {"topologyName": "default"}})")},
      {"has(self.minCount) ? self.minCount <= self.count : true",
       vars(R"({"self": {"name": "main", "count": 3, "minCount": 2}})"),
       vars(R"({"self": {"name": "main", "count": 3, "minCount": 4}})")},
      {"has(self.priorityClassName) ? has(self.priority) : true",
       vars(R"({"self": {"priorityClassName": "high", "priority": 100}})"),
       vars(R"({"self": {"priorityClassName": "high"}})")},
      {"!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
       vars(R"({"self": {"clusterName": "worker1"}, "oldSelf": {"clusterName": "worker1"}})"),
       vars(R"({"self": {"clusterName": "worker2"}, "oldSelf": {"clusterName": "worker1"}})")},
      {"!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) && "
       "size(self.nominatedClusterNames) == 0))",
       vars(R"({"self": {"clusterName": "worker1", "nominatedClusterNames": []}})"),
       vars(R"({"self": {"clusterName": "worker1", "nominatedClusterNames": ["worker2"]}})")},
      {"has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' "
       "&& c.status == 'True') && has(self.status.admission) ? size(self.spec.podSets) == "
       "size(self.status.admission.podSetAssignments) : true",
       vars(R"({"self": {"spec": {"podSets": [{"name": "main", "count": 1}]},
                         "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}],
                                    "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main"}]}}}})"),
       vars(R"({"self": {"spec": {"podSets": [{"name": "main", "count": 1}]},
                         "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}],
                                    "admission": {"clusterQueue": "cq", "podSetAssignments": []}}}})")},
      {"(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == "
       "'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassSource) && "
       "has(self.spec.priorityClassSource)) ? (oldSelf.spec.priorityClassSource == self.spec.priorityClassSource) : "
       "true",
       transition(workload({{"priorityClassSource", "kueue.x-k8s.io/workloadpriorityclass"}}),
                  workload({{"priorityClassSource", "kueue.x-k8s.io/workloadpriorityclass"}})),
       transition(workload({{"priorityClassSource", "scheduling.k8s.io/priorityclass"}}),
                  workload({{"priorityClassSource", "kueue.x-k8s.io/workloadpriorityclass"}}))},
      {"(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == "
       "'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassSource) && "
       "has(self.spec.priorityClassSource) && (self.spec.priorityClassSource != "
       "'kueue.x-k8s.io/workloadpriorityclass') && has(oldSelf.spec.priorityClassName) && "
       "has(self.spec.priorityClassName)) ? (oldSelf.spec.priorityClassName == self.spec.priorityClassName) : true",
       // A WorkloadPriorityClass may change while quota is reserved.
       transition(
           workload({{"priorityClassSource", "kueue.x-k8s.io/workloadpriorityclass"}, {"priorityClassName", "b"}}),
           workload({{"priorityClassSource", "kueue.x-k8s.io/workloadpriorityclass"}, {"priorityClassName", "a"}})),
       transition(workload({{"priorityClassSource", "scheduling.k8s.io/priorityclass"}, {"priorityClassName", "b"}}),
                  workload({{"priorityClassSource", "scheduling.k8s.io/priorityclass"}, {"priorityClassName", "a"}}))},
      {"((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == "
       "'QuotaReserved' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && "
       "self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True'))) ? "
       "((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || "
       "oldSelf.spec.queueName == self.spec.queueName)) : true",
       // Without reserved quota in the new object the queue may change.
       transition(workload({{"queueName", "b"}}, ""), workload({{"queueName", "a"}})),
       transition(workload(json::object()), workload({{"queueName", "a"}}))},
      {"((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == "
       "'Admitted' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && "
       "self.status.conditions.exists(c, c.type == 'Admitted' && c.status == "
       "'True')))?((has(oldSelf.spec.maximumExecutionTimeSeconds)?oldSelf.spec.maximumExecutionTimeSeconds:0) ==  "
       "(has(self.spec.maximumExecutionTimeSeconds)?self.spec.maximumExecutionTimeSeconds:0)):true",
       transition(workload({{"maximumExecutionTimeSeconds", 600}}, "Admitted"),
                  workload({{"maximumExecutionTimeSeconds", 600}}, "Admitted")),
       transition(workload(json::object(), "Admitted"), workload({{"maximumExecutionTimeSeconds", 600}}, "Admitted"))},
      {"(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
       vars(R"({"self": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}})"),
       vars(R"({"self": {"group": "scheduling.k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}})")},
      {"(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
       vars(R"({"self": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}})"),
       vars(R"({"self": {"group": "kueue.x-k8s.io", "kind": "PriorityClass", "name": "high"}})")},
      {"!has(self.priorityClassRef) || has(self.priority)",
       vars(R"({"self": {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                              "name": "high"}, "priority": 100}})"),
       vars(R"({"self": {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                              "name": "high"}}})")},
      {"[has(self.universal),has(self.individual)].filter(x,x==true).size() == 1",
       vars(R"({"self": {"universal": 4}})"), vars(R"({"self": {}})")},
      {"has(self.universal) != has(self.individual)", vars(R"({"self": {"individual": {"roots": ["r1"]}}})"),
       vars(R"({"self": {"universal": "u", "individual": {"roots": ["r1"]}}})")},
      {"!has(self.podCounts.individual) || size(self.podCounts.individual) == self.domainCount",
       vars(R"({"self": {"domainCount": 2, "podCounts": {"individual": [1, 3]}}})"),
       vars(R"({"self": {"domainCount": 3, "podCounts": {"individual": [1, 3]}}})")},
      {"self.valuesPerLevel.all(x, !has(x.individual) || size(x.individual.roots) == self.domainCount)",
       vars(
           R"({"self": {"domainCount": 1, "valuesPerLevel": [{"universal": "u"}, {"individual": {"roots": ["r"]}}]}})"),
       vars(R"({"self": {"domainCount": 1, "valuesPerLevel": [{"individual": {"roots": ["r", "s"]}}]}})")},
      {"self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
       vars(R"({"self": {"levels": ["block", "rack"], "slices": [{"valuesPerLevel": [{}, {}]}]}})"),
       vars(R"({"self": {"levels": ["block", "rack"], "slices": [{"valuesPerLevel": [{}]}]}})")},
      {"(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == "
       "'QuotaReserved' && c.status == 'True')) ? (!has(oldSelf.spec.priorityClassRef) && "
       "!has(self.spec.priorityClassRef)) || (has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) "
       ": true",
       transition(workload({{"priorityClassRef", {{"name", "b"}}}}), workload({{"priorityClassRef", {{"name", "a"}}}})),
       transition(workload(json::object()), workload({{"priorityClassRef", {{"name", "a"}}}}))},
      {"(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == "
       "'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && "
       "has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.group == self.spec.priorityClassRef.group : "
       "true",
       transition(workload({{"priorityClassRef", {{"group", "kueue.x-k8s.io"}}}}),
                  workload({{"priorityClassRef", {{"group", "kueue.x-k8s.io"}}}})),
       transition(workload({{"priorityClassRef", {{"group", "scheduling.k8s.io"}}}}),
                  workload({{"priorityClassRef", {{"group", "kueue.x-k8s.io"}}}}))},
      {"(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == "
       "'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && "
       "has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.kind == self.spec.priorityClassRef.kind : "
       "true",
       // Not reserved before: anything may change.
       transition(workload({{"priorityClassRef", {{"kind", "PriorityClass"}}}}),
                  workload({{"priorityClassRef", {{"kind", "WorkloadPriorityClass"}}}}, "")),
       transition(workload({{"priorityClassRef", {{"kind", "PriorityClass"}}}}),
                  workload({{"priorityClassRef", {{"kind", "WorkloadPriorityClass"}}}}))},
      {"(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == "
       "'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && "
       "has(self.spec.priorityClassRef) && self.spec.priorityClassRef.group == 'scheduling.k8s.io' && "
       "self.spec.priorityClassRef.kind == 'PriorityClass') ? oldSelf.spec.priorityClassRef.name == "
       "self.spec.priorityClassRef.name : true",
       transition(workload({{"priorityClassRef",
                             {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "b"}}}}),
                  workload({{"priorityClassRef",
                             {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "a"}}}})),
       transition(
           workload({{"priorityClassRef", {{"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"name", "b"}}}}),
           workload(
               {{"priorityClassRef", {{"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"name", "a"}}}}))},
  });
  return cases;
}

TEST(CrdRules, EveryRuleCompiles) {
  const auto& rules = allRules();
  ASSERT_FALSE(rules.empty());
  for (const auto& r : rules) {
    SCOPED_TRACE(r.where);
    try {
      Program::compile(r.rule);
    } catch (const CompileError& e) {
      ADD_FAILURE() << "rule " << r.rule << ": " << e.what();
    }
  }
}

TEST(CrdRules, EveryDistinctRuleHasOneCase) {
  std::map<std::string, std::string> distinct;  // rule -> where it first appears
  for (const auto& r : allRules()) distinct.emplace(r.rule, r.where);
  std::map<std::string, const RuleCase*> table;
  for (const auto& c : ruleCases()) {
    EXPECT_TRUE(table.emplace(c.rule, &c).second) << "two cases for the rule " << c.rule;
  }

  for (const auto& [rule, where] : distinct) {
    if (!table.count(rule))
      ADD_FAILURE() << "no case for the rule (add one to ruleCases() in " << __FILE__ << "):\n"
                    << rule << "\nfirst found at " << where;
  }
  std::cout << distinct.size() << " distinct rules in " << allRules().size() << " places, " << table.size()
            << " cases\n";
}

MKA_TABLE_TEST(CrdRules, EveryDistinctRuleHoldsOnItsValidCaseAndFailsOnItsInvalidOne, RuleCase, ruleCases()) {
  const RuleCase& c = testCase();
  const auto& rules = allRules();
  if (std::none_of(rules.begin(), rules.end(), [&](const FoundRule& r) { return r.rule == c.rule; })) {
    ADD_FAILURE() << "a case for a rule no CRD has (remove it, or the CRD changed the rule):\n" << c.rule;
    return;
  }
  const Program program = Program::compile(c.rule);
  for (const auto* variables : {&c.valid, &c.invalid}) {
    EXPECT_EQ(variables->contains("oldSelf"), program.usesOldSelf()) << "give oldSelf exactly to transition rules";
    const bool expected = variables == &c.valid;
    try {
      EXPECT_EQ(evaluateWith(program, *variables), json(expected)) << variables->dump();
    } catch (const EvalError& e) {
      ADD_FAILURE() << "expected " << expected << " on " << variables->dump() << ", got the error: " << e.what();
    }
  }
}

TEST(CrdRules, EveryMessageExpressionEvaluatesToAString) {
  // kube-apiserver shows a rule's messageExpression when the rule fails: evaluate each on the
  // invalid case of its rule.
  std::map<std::string, const RuleCase*> table;
  for (const auto& c : ruleCases()) table.emplace(c.rule, &c);
  int count = 0;
  for (const auto& r : allRules()) {
    if (r.messageExpression.empty()) continue;
    ++count;
    SCOPED_TRACE(r.where + ": " + r.messageExpression);
    const auto c = table.find(r.rule);
    if (c == table.end()) continue;  // reported by the test above
    try {
      const json message = evaluateWith(Program::compile(r.messageExpression), c->second->invalid);
      EXPECT_TRUE(message.is_string()) << message.dump();
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
  std::cout << count << " messageExpressions\n";
}

}  // namespace
}  // namespace mka::cel
