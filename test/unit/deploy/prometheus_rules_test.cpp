// `multikueue-adapter manifests --prometheus-rules`: every series an alert reads is one the
// adapter exports, each alert has its summary, description and runbook, the configuration decides
// which alerts apply, and promtool evaluates the rules the binary prints against
// test/fixtures/alerts/alerts_test.yaml (one firing and one quiet case per alert).
#include "mka/deploy/prometheus_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "mka/config/loader.h"
#include "mka/observability/metrics.h"
#include "mka/yaml/json.h"
#include "support/promtool.h"
#include "support/table_test.h"
#include "support/temp_dir.h"

// Its own namespace: the deploy tests share a unity build.
namespace mka::deploy::prometheus_rules {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

const fs::path kAlertsFixtures = fs::path(MKA_FIXTURES_DIR) / "alerts";

// The fixture's configuration, with `from` replaced by `to`.
config::Configuration configuration(const std::string& from = "", const std::string& to = "") {
  std::string text = test::readFile(kAlertsFixtures / "config.yaml");
  if (!from.empty()) {
    const auto at = text.find(from);
    if (at == std::string::npos) throw Error("config.yaml has no " + from);
    text.replace(at, from.size(), to);
  }
  auto loaded = config::parseConfiguration(text);
  if (!loaded.ok()) throw ValidationError(loaded.errors);
  return *loaded.config;
}

// The rules of the one group, as a reader gets them.
json rulesOf(const Manifest& manifest) {
  return json::parse(manifest.object.dump()).at("spec").at("groups").at(0).at("rules");
}

std::vector<std::string> alertNames(const Manifest& manifest) {
  std::vector<std::string> names;
  for (const auto& rule : rulesOf(manifest)) names.push_back(rule.at("alert"));
  return names;
}

json alertNamed(const Manifest& manifest, std::string_view name) {
  for (const auto& rule : rulesOf(manifest))
    if (rule.at("alert") == name) return rule;
  ADD_FAILURE() << "no alert " << name;
  return json::object();
}

// PromQL's words that are not series: aggregations (a grouping clause may stand between one and
// its parenthesis), keywords, and the modifiers followed by a list of label names.
const std::set<std::string, std::less<>> kAggregations = {
    "sum", "min", "max", "avg", "group", "count", "stddev", "stdvar", "bottomk", "topk", "quantile", "count_values"};
const std::set<std::string, std::less<>> kKeywords = {"and", "or", "unless", "bool", "offset", "inf", "nan"};
const std::set<std::string, std::less<>> kLabelLists = {"by", "without", "on", "ignoring", "group_left", "group_right"};

// The series names a PromQL expression selects: the names outside strings, label matchers,
// ranges and label lists that are neither a call (followed by "(") nor a word of PromQL's.
std::set<std::string> seriesNames(std::string_view expr) {
  std::set<std::string> names;
  const auto skipString = [&](std::size_t i) {
    const char quote = expr[i];
    for (++i; i < expr.size() && expr[i] != quote; ++i)
      if (expr[i] == '\\') ++i;
    return i + 1;
  };
  const auto skipTo = [&](std::size_t i, char close) {
    while (i < expr.size() && expr[i] != close) i = expr[i] == '"' ? skipString(i) : i + 1;
    return i + 1;
  };
  const auto isNameChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; };
  std::size_t i = 0;
  while (i < expr.size()) {
    const char c = expr[i];
    if (c == '"' || c == '\'') {
      i = skipString(i);
    } else if (c == '{') {
      i = skipTo(i, '}');
    } else if (c == '[') {
      i = skipTo(i, ']');
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < expr.size() && (isNameChar(expr[i]) || expr[i] == '.')) ++i;  // 0.01, 1e3
    } else if (isNameChar(c)) {
      const std::size_t start = i;
      while (i < expr.size() && isNameChar(expr[i])) ++i;
      const std::string word(expr.substr(start, i - start));
      std::size_t next = i;
      while (next < expr.size() && expr[next] == ' ') ++next;
      const bool call = next < expr.size() && expr[next] == '(';
      if (kLabelLists.contains(word)) {
        if (call) i = skipTo(next, ')');
      } else if (!call && !kAggregations.contains(word) && !kKeywords.contains(word)) {
        names.insert(word);
      }
    } else {
      ++i;
    }
  }
  return names;
}

TEST(PrometheusRuleSeries, TheExtractorFindsSeriesNotCallsLabelsOrKeywords) {
  EXPECT_EQ(seriesNames("sum by (webhook) (rate(a_total{result=\"error\",x=~\"b|c\"}[5m])) / sum by (webhook) "
                        "(rate(a_total[5m])) > 0.01"),
            (std::set<std::string>{"a_total"}));
  EXPECT_EQ(seriesNames("(x == 0) and on (instance) (y{name=\"z\"} == 1)"), (std::set<std::string>{"x", "y"}));
  EXPECT_EQ(seriesNames("max(y) < 1 or absent(y)"), (std::set<std::string>{"y"}));
  EXPECT_EQ(seriesNames("e - time() < 7 * 86400"), (std::set<std::string>{"e"}));
}

// A name the registry holds, or a histogram's series of one (_bucket, _sum, _count).
bool exported(const std::string& name, const std::vector<std::string>& families) {
  const auto has = [&](std::string_view n) { return std::find(families.begin(), families.end(), n) != families.end(); };
  if (has(name)) return true;
  for (const std::string_view suffix : {"_bucket", "_sum", "_count"})
    if (name.ends_with(suffix) && has(std::string_view(name).substr(0, name.size() - suffix.size()))) return true;
  return false;
}

TEST(PrometheusRuleSeries, EverySeriesAnAlertReadsIsOneTheAdapterExports) {
  const auto families = observability::Metrics().familyNames();
  for (const auto& rule : rulesOf(renderPrometheusRule(configuration()))) {
    const std::string expr = rule.at("expr");
    const auto names = seriesNames(expr);
    EXPECT_FALSE(names.empty()) << rule.at("alert") << ": no series found in " << expr;
    for (const auto& name : names)
      EXPECT_TRUE(exported(name, families))
          << rule.at("alert") << ": " << name << " is not a metric the adapter exports (expr: " << expr << ")";
  }
}

TEST(PrometheusRuleObject, IsAPrometheusRuleInTheAdaptersNamespaceLabelledAsTheOthers) {
  const auto object = json::parse(renderPrometheusRule(configuration()).object.dump());
  EXPECT_EQ(object.at("apiVersion"), "monitoring.coreos.com/v1");
  EXPECT_EQ(object.at("kind"), "PrometheusRule");
  EXPECT_EQ(object.at("metadata").at("namespace"), kNamespace);
  EXPECT_EQ(object.at("metadata").at("name"), kName);
  EXPECT_EQ(object.at("metadata").at("labels"), json::parse(commonLabels().dump()));
}

TEST(PrometheusRuleObject, EveryAlertHasASeverityASummaryADescriptionAndARunbookOfCommands) {
  const auto manifest = renderPrometheusRule(configuration());
  EXPECT_THAT(alertNames(manifest),
              ::testing::ElementsAre("MultiKueueAdapterWorkerDisconnected", "MultiKueueAdapterConfigReloadFailed",
                                     "MultiKueueAdapterNoLeader", "MultiKueueAdapterWebhookErrors",
                                     "MultiKueueAdapterWebhookSlow", "MultiKueueAdapterCertificateExpiringSoon",
                                     "MultiKueueAdapterWorkQueueGrowing", "MultiKueueAdapterWorkloadsStuck"));
  for (const auto& rule : rulesOf(manifest)) {
    const auto& annotations = rule.at("annotations");
    EXPECT_THAT(rule.at("labels").value("severity", ""), ::testing::AnyOf("warning", "critical")) << rule;
    for (const char* key : {"summary", "description", "runbook"})
      EXPECT_FALSE(annotations.value(key, "").empty()) << rule.at("alert") << ": no " << key;
    const std::string runbook = annotations.value("runbook", "");
    EXPECT_TRUE(runbook.starts_with("Run multikueue-adapter ") || runbook.starts_with("kubectl "))
        << rule.at("alert") << ": the runbook starts with what to run: " << runbook;
  }
  EXPECT_THAT(alertNamed(manifest, "MultiKueueAdapterWorkerDisconnected")["annotations"].value("runbook", ""),
              HasSubstr("multikueue-adapter workers"));
  EXPECT_THAT(alertNamed(manifest, "MultiKueueAdapterConfigReloadFailed")["annotations"].value("runbook", ""),
              HasSubstr("multikueue-adapter validate-config"));
  // The jobs an alert is about: which ones, and why each.
  for (const char* alert : {"MultiKueueAdapterWorkerDisconnected", "MultiKueueAdapterWorkloadsStuck"}) {
    const auto runbook = alertNamed(manifest, alert)["annotations"].value("runbook", "");
    EXPECT_THAT(runbook, HasSubstr("multikueue-adapter jobs -A")) << alert;
    EXPECT_THAT(runbook, HasSubstr("multikueue-adapter explain <kind>/<name>")) << alert;
  }
}

TEST(PrometheusRuleConfiguration, StuckAfterIsTheThresholdOfTheStuckAlert) {
  const auto rule = alertNamed(renderPrometheusRule(configuration(), {.stuckAfter = std::chrono::hours{2}}),
                               "MultiKueueAdapterWorkloadsStuck");
  EXPECT_THAT(rule.value("expr", ""), HasSubstr("> 7200")) << rule;
  EXPECT_THAT(rule["annotations"].value("summary", ""), HasSubstr("more than 2h0m0s")) << rule;
}

TEST(PrometheusRuleConfiguration, WithoutLeaderElectionThereIsNoLeaderAlertAndNoLeaderGate) {
  const auto manifest = renderPrometheusRule(configuration("leaderElect: true", "leaderElect: false"));
  EXPECT_THAT(alertNames(manifest), ::testing::Not(::testing::Contains("MultiKueueAdapterNoLeader")));
  for (const auto& rule : rulesOf(manifest))
    EXPECT_THAT(rule.value("expr", ""), ::testing::Not(HasSubstr("leader_election_master_status"))) << rule;
}

TEST(PrometheusRuleConfiguration, WithoutTheDispatchLoopThereAreNoDispatchAlerts) {
  const auto names =
      alertNames(renderPrometheusRule(configuration("dispatch:\n  enabled: true", "dispatch:\n  enabled: false")));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("MultiKueueAdapterWorkerDisconnected")));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("MultiKueueAdapterWorkloadsStuck")));
  EXPECT_THAT(names, ::testing::Contains("MultiKueueAdapterWebhookErrors"));
}

TEST(PrometheusRulesCommand, RefusesWhatValidateConfigRefuses) {
  test::TempDir dir;
  const auto file = dir.write("config.yaml", "apiVersion: config.multikueue-adapter.dev/v1alpha1\nkind: Nope\n");
  std::ostringstream out, err;
  EXPECT_EQ(prometheusRulesCommand(file, {}, out, err), 1);
  EXPECT_EQ(out.str(), "");
  EXPECT_THAT(err.str(), HasSubstr(file.string()));
}

// What the binary prints, as promtool reads it: `spec` is a Prometheus rules file.
struct RenderedRules {
  fs::path rules;
  fs::path tests;
};

RenderedRules renderWithTheBinary(const test::TempDir& dir) {
  const auto run = test::runTool(MKA_BINARY, {"manifests", "--config", (kAlertsFixtures / "config.yaml").string(),
                                              "--prometheus-rules", "--stuck-after", "30m"});
  EXPECT_EQ(run.exitCode, 0) << run.output;
  const auto documents = yaml::parseJson(run.output, yaml::Limits::forManifests());
  EXPECT_EQ(documents.size(), 1u) << run.output;
  if (documents.empty()) return {};
  // JSON is YAML: promtool reads it as it is.
  const auto rules = dir.write("rules.yaml", documents.at(0).at("spec").dump(2));
  const auto tests = dir.write("alerts_test.yaml", test::readFile(kAlertsFixtures / "alerts_test.yaml"));
  return {rules, tests};
}

TEST(PrometheusRulesPromtool, CheckRulesAcceptsTheRenderedRules) {
  const auto promtool = test::findPromtool();
  ASSERT_TRUE(promtool) << test::kPromtoolMissing;
  test::TempDir dir;
  const auto rendered = renderWithTheBinary(dir);
  ASSERT_FALSE(rendered.rules.empty());
  const auto run = test::runTool(*promtool, {"check", "rules", rendered.rules.string()});
  EXPECT_EQ(run.exitCode, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("SUCCESS: 8 rules found")) << run.output;
}

TEST(PrometheusRulesPromtool, EveryAlertFiresOnItsCaseAndStaysQuietOnTheOther) {
  const auto promtool = test::findPromtool();
  ASSERT_TRUE(promtool) << test::kPromtoolMissing;
  test::TempDir dir;
  const auto rendered = renderWithTheBinary(dir);
  ASSERT_FALSE(rendered.tests.empty());
  // Every alert the rules hold has a firing case and a quiet one in the test file.
  const auto tests = yaml::parseJson(test::readFile(rendered.tests), yaml::Limits::forManifests()).at(0);
  std::map<std::string, std::pair<int, int>> cases;  // alert -> (firing, quiet)
  for (const auto& test : tests.at("tests"))
    for (const auto& c : test.value("alert_rule_test", json::array()))
      (c.value("exp_alerts", json::array()).empty() ? cases[c.at("alertname")].second
                                                    : cases[c.at("alertname")].first)++;
  for (const auto& name : alertNames(renderPrometheusRule(configuration()))) {
    EXPECT_GE(cases[name].first, 1) << name << ": no case in alerts_test.yaml where it fires";
    EXPECT_GE(cases[name].second, 1) << name << ": no case in alerts_test.yaml where it stays quiet";
  }
  const auto run = test::runTool(*promtool, {"test", "rules", rendered.tests.string()});
  EXPECT_EQ(run.exitCode, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("SUCCESS")) << run.output;
}

}  // namespace
}  // namespace mka::deploy::prometheus_rules
