// Which of Kueue's own integrations its MultiKueue dispatches, and when the adapter is in
// drop-in mode: what validate-config --kueue-config refuses drop-in mode over.
#include "mka/config/kueue_builtin_kinds.h"

#include <gtest/gtest.h>

#include "support/table_test.h"

namespace mka::config {
namespace {

struct DispatchedCase {
  std::string name;
  std::vector<std::string> kueueFrameworks;
  std::vector<std::string> dispatched;
};

std::vector<DispatchedCase> dispatchedCases() {
  return {
      {"none listed: Kueue's default, batch/job", {}, {"batch/job"}},
      {"in the listed order, each once",
       {"kubeflow.org/pytorchjob", "deployment", "batch/job", "kubeflow.org/pytorchjob"},
       {"kubeflow.org/pytorchjob", "batch/job"}},
      {"kinds without a MultiKueue adapter", {"deployment", "sparkoperator.k8s.io/sparkapplication"}, {}},
  };
}

MKA_TABLE_TEST(KueueBuiltinKinds, DispatchedFrameworksAreThoseWithAMultiKueueAdapter, DispatchedCase,
               dispatchedCases()) {
  const auto& c = testCase();
  EXPECT_EQ(multiKueueDispatchedFrameworks(c.kueueFrameworks), c.dispatched);
}

TEST(KueueBuiltinKinds, DropInIsDispatchingUnderKueuesControllerName) {
  Configuration c;
  EXPECT_FALSE(isDropIn(c)) << "the dispatcher mode is the default";
  c.dispatch.admissionCheckControllerName = std::string(api::kMultiKueueControllerName);
  EXPECT_TRUE(isDropIn(c));
  c.dispatch.enabled = false;
  EXPECT_FALSE(isDropIn(c)) << "webhook-only mode dispatches nothing";
}

}  // namespace
}  // namespace mka::config
