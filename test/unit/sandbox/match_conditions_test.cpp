// A webhook configuration's matchConditions are checked when it is written, as kube-apiserver
// checks them: at most 64 a webhook, names qualified and unique, expressions that compile, each
// error naming its field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mka/common/clock.h"
#include "mka/sandbox/api_error.h"
#include "mka/sandbox/cluster_api.h"
#include "support/table_test.h"
#include "support/thrown.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const ResourceRef kValidating{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "", ""};
const ResourceRef kMutating{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "", "", ""};

json condition(const std::string& name, const std::string& expression) {
  return {{"name", name}, {"expression", expression}};
}

json configuration(const std::string& kind, const json& conditions, const std::string& name = "hooks") {
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", kind},
          {"metadata", {{"name", name}}},
          {"webhooks", json::array({{{"name", "check.example.com"},
                                     {"clientConfig", {{"url", "https://127.0.0.1:1/check"}}},
                                     {"sideEffects", "None"},
                                     {"admissionReviewVersions", {"v1"}},
                                     {"matchConditions", conditions}}})}};
}

class MatchConditionsValidation : public ::testing::Test {
 protected:
  MatchConditionsValidation() : api("test", registry, store, clock) {}
  FakeClock clock;
  ResourceRegistry registry;
  ObjectStore store;
  ClusterApi api;
};

TEST_F(MatchConditionsValidation, ConditionsThatCompileAreStored) {
  const json conditions = json::array({condition("updates-only", "request.operation == 'UPDATE'"),
                                       condition("label-changed",
                                                 "has(object.metadata.labels) && has(oldObject.metadata.labels) && "
                                                 "object.metadata.labels != oldObject.metadata.labels")});
  api.create(kValidating, configuration("ValidatingWebhookConfiguration", conditions));
  api.create(kMutating, configuration("MutatingWebhookConfiguration", conditions));
  EXPECT_EQ(api.get({"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "hooks", ""})
                .at("webhooks")
                .at(0)
                .at("matchConditions"),
            conditions);
}

struct RefusedCase {
  std::string name;
  json conditions;
  std::string message;  // after `ValidatingWebhookConfiguration.admissionregistration.k8s.io "hooks" is invalid: `
};

std::vector<RefusedCase> refusedCases() {
  json tooMany = json::array();
  for (int i = 0; i < 65; ++i) tooMany.push_back(condition("c" + std::to_string(i), "true"));
  return {
      {"an expression that does not compile", json::array({condition("c", "object.metadata.name ==")}),
       "webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed: "
       "unexpected end of the expression at column 24"},
      {"a variable the environment does not declare",
       json::array({condition("c", "true"), condition("d", "self.spec == 1")}),
       "webhooks[0].matchConditions[1].expression: Invalid value: \"self.spec == 1\": compilation failed: "
       "undeclared reference to \"self\" at column 1"},
      {"the authorizer, which the sandbox does not evaluate",
       json::array({condition("c", "authorizer.group('').resource('pods').check('get').allowed()")}),
       "webhooks[0].matchConditions[0].expression: Invalid value: "
       "\"authorizer.group('').resource('pods').check('get').allowed()\": compilation failed: "},
      {"an empty expression", json::array({condition("c", "  ")}),
       "webhooks[0].matchConditions[0].expression: Required value"},
      {"a name that is not a qualified name", json::array({condition("not a name", "true")}),
       "webhooks[0].matchConditions[0].name: Invalid value: \"not a name\": "},
      {"no name", json::array({condition("", "true")}), "webhooks[0].matchConditions[0].name: Required value"},
      {"two conditions of one name", json::array({condition("same", "true"), condition("same", "false")}),
       "webhooks[0].matchConditions[1].name: Duplicate value: \"same\""},
      {"more than 64 conditions", tooMany, "webhooks[0].matchConditions: Too many: 65: must have at most 64 items"},
  };
}

MKA_TABLE_TEST_F(MatchConditionsValidation, RefusedWithTheFieldNamed, RefusedCase, refusedCases()) {
  const auto& c = testCase();
  const auto e = test::thrownBy<ApiError>(
      [&] { api.create(kValidating, configuration("ValidatingWebhookConfiguration", c.conditions)); });
  EXPECT_EQ(e.code(), 422);
  EXPECT_THAT(
      std::string(e.what()),
      HasSubstr("ValidatingWebhookConfiguration.admissionregistration.k8s.io \"hooks\" is invalid: " + c.message));
  const auto mutating = test::thrownBy<ApiError>(
      [&] { api.create(kMutating, configuration("MutatingWebhookConfiguration", c.conditions)); });
  EXPECT_THAT(std::string(mutating.what()), HasSubstr(c.message)) << "mutating webhooks are checked alike";
}

TEST_F(MatchConditionsValidation, AnUpdateIsCheckedUnlessItKeepsTheStoredConditions) {
  api.create(kValidating, configuration("ValidatingWebhookConfiguration", json::array({condition("c", "true")})));
  auto ref = kValidating;
  ref.name = "hooks";
  json changed = api.get(ref);
  changed["webhooks"][0]["matchConditions"][0]["expression"] = "1 +";
  EXPECT_THAT(test::messageOf<ApiError>([&] { api.update(ref, changed); }),
              HasSubstr("webhooks[0].matchConditions[0].expression: Invalid value: \"1 +\": compilation failed"));

  // Conditions stored before they were checked (kube-apiserver: by an older version) may be
  // written back as they are, with other fields changed.
  json stored = api.get(ref);
  stored["webhooks"][0]["matchConditions"][0]["expression"] = "1 +";
  store.update({"admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "hooks"}, stored);
  json relabelled = api.get(ref);
  relabelled["metadata"]["labels"] = {{"team", "a"}};
  EXPECT_NO_THROW(api.update(ref, relabelled));
}

}  // namespace
}  // namespace mka::sandbox
