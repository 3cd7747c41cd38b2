#include "mka/api/gvk.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::api {
namespace {

struct ParseDottedSplitsAtTheFirstTwoDotsCase {
  std::string name;
  std::string text;
  std::optional<GroupVersionKind> expected;
};

std::vector<ParseDottedSplitsAtTheFirstTwoDotsCase> parseDottedSplitsAtTheFirstTwoDotsCases() {
  const std::vector<ParseDottedSplitsAtTheFirstTwoDotsCase> cases = {
      {"tekton", "PipelineRun.v1.tekton.dev", GroupVersionKind{"tekton.dev", "v1", "PipelineRun"}},
      {"argo", "Workflow.v1alpha1.argoproj.io", GroupVersionKind{"argoproj.io", "v1alpha1", "Workflow"}},
      {"single-word group", "Job.v1.batch", GroupVersionKind{"batch", "v1", "Job"}},
      {"empty version kept, as Kueue does", "PipelineRun..tekton.dev",
       GroupVersionKind{"tekton.dev", "", "PipelineRun"}},
      {"empty group", "Kind.v1.", GroupVersionKind{"", "v1", "Kind"}},
      {"one dot", "PipelineRun.tekton", std::nullopt},
      {"no dot", "PipelineRun", std::nullopt},
      {"empty", "", std::nullopt},
  };
  return cases;
}

MKA_TABLE_TEST(GroupVersionKind, ParseDottedSplitsAtTheFirstTwoDots, ParseDottedSplitsAtTheFirstTwoDotsCase,
               parseDottedSplitsAtTheFirstTwoDotsCases()) {
  const ParseDottedSplitsAtTheFirstTwoDotsCase& c = testCase();
  EXPECT_EQ(GroupVersionKind::parseDotted(c.text), c.expected);
}

struct SpellingsCase {
  std::string name;
  GroupVersionKind gvk;
  std::string apiVersion, dotted, goString;
};

std::vector<SpellingsCase> spellingsCases() {
  const std::vector<SpellingsCase> cases = {
      {"tekton",
       {"tekton.dev", "v1", "PipelineRun"},
       "tekton.dev/v1",
       "PipelineRun.v1.tekton.dev",
       "tekton.dev/v1, Kind=PipelineRun"},
      {"core", {"", "v1", "Pod"}, "v1", "Pod.v1.", "/v1, Kind=Pod"},
      {"batch", {"batch", "v1", "Job"}, "batch/v1", "Job.v1.batch", "batch/v1, Kind=Job"},
  };
  return cases;
}

MKA_TABLE_TEST(GroupVersionKind, Spellings, SpellingsCase, spellingsCases()) {
  const SpellingsCase& c = testCase();
  EXPECT_EQ(c.gvk.apiVersion(), c.apiVersion);
  EXPECT_EQ(c.gvk.dotted(), c.dotted);
  EXPECT_EQ(c.gvk.goString(), c.goString);
}

TEST(GroupVersionKind, FromApiVersion) {
  EXPECT_EQ(GroupVersionKind::fromApiVersion("tekton.dev/v1", "PipelineRun"),
            (GroupVersionKind{"tekton.dev", "v1", "PipelineRun"}));
  EXPECT_EQ(GroupVersionKind::fromApiVersion("v1", "ConfigMap"), (GroupVersionKind{"", "v1", "ConfigMap"}));
  EXPECT_EQ(GroupVersionKind::fromApiVersion("", "X"), (GroupVersionKind{"", "", "X"}));
}

TEST(GroupVersionKind, ParsedDottedRoundTrips) {
  const GroupVersionKind gvk{"argoproj.io", "v1alpha1", "Workflow"};
  EXPECT_EQ(GroupVersionKind::parseDotted(gvk.dotted()), gvk);
  EXPECT_EQ(GroupVersionKind::fromApiVersion(gvk.apiVersion(), gvk.kind), gvk);
}

TEST(GroupVersionKind, OrderingIsUsableAsAMapKey) {
  const GroupVersionKind a{"a.io", "v1", "X"};
  const GroupVersionKind b{"b.io", "v1", "X"};
  EXPECT_LT(a, b);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, (GroupVersionKind{"a.io", "v1", "X"}));
}

// Each case is named by its kind.
struct ResourceOfCase {
  std::string name;
  std::string plural;
};

std::vector<ResourceOfCase> guessesThePluralAsKubeApiserverDoesCases() {
  return {{"PipelineRun", "pipelineruns"}, {"Workflow", "workflows"}, {"TrainingRun", "trainingruns"},
          {"Policy", "policies"},          {"Ingress", "ingresses"},  {"Status", "statuses"},
          {"Endpoints", "endpoints"}};
}

MKA_TABLE_TEST(GuessResource, IsKubeApiserversGuess, ResourceOfCase, guessesThePluralAsKubeApiserverDoesCases()) {
  const auto& [kind, plural] = testCase();
  EXPECT_EQ(guessResource(kind), plural) << kind;
}

// The kinds whose English plural does not follow the guess are named; the regular ones not.
struct ResourceGuessDoubtCase {
  std::string name;  // the kind
  bool doubtful;
};

std::vector<ResourceGuessDoubtCase> resourceGuessDoubtCases() {
  return {{"PipelineRun", false}, {"Workflow", false}, {"TrainingRun", false}, {"Policy", false}, {"Ingress", false},
          {"Gateway", true},      {"Matrix", true},    {"Batch", true},        {"Mesh", true},    {"Analysis", true},
          {"Leaf", true},         {"Person", true},    {"Repo", true}};
}

MKA_TABLE_TEST(ResourceGuessDoubt, NamesTheKindsWhosePluralIsNotTheGuess, ResourceGuessDoubtCase,
               resourceGuessDoubtCases()) {
  const auto& c = testCase();
  const auto doubt = resourceGuessDoubt(c.name);
  EXPECT_EQ(doubt.has_value(), c.doubtful) << c.name << ": " << doubt.value_or("");
  if (doubt) {
    EXPECT_THAT(*doubt, ::testing::HasSubstr("kube-apiserver's guess from the kind is " + guessResource(c.name)));
  }
}

}  // namespace
}  // namespace mka::api
