#include <gtest/gtest.h>

#include <mutex>

#include "config_test_util.h"
#include "mka/config/loader.h"
#include "mka/config/store.h"
#include "support/eventually.h"
#include "support/fixtures.h"
#include "support/secret_volume.h"
#include "support/temp_dir.h"

namespace mka::config {
namespace {

using namespace std::chrono_literals;
using test::adapterDoc;

std::string goodConfig(const std::string& origin) { return adapterDoc("multiKueue: {origin: " + origin + "}\n"); }
const std::string kBadConfig = adapterDoc("multiKueue: {origin: \"not/valid\", gcInterval: 5}\n");

// Collects what the reloader reports, from whichever thread it reports on.
class Results {
 public:
  void add(const FieldErrors& errors) {
    std::lock_guard lock(mutex_);
    all_.push_back(errors);
  }
  std::vector<FieldErrors> all() const {
    std::lock_guard lock(mutex_);
    return all_;
  }
  ConfigReloader::ResultCallback callback() {
    return [this](const FieldErrors& e) { add(e); };
  }

 private:
  mutable std::mutex mutex_;
  std::vector<FieldErrors> all_;
};

TEST(ConfigReloader, ReloadNowSwapsGoodFilesAndKeepsTheLastGoodOne) {
  mka::test::TempDir dir;
  const auto file = dir / "config.yaml";
  ConfigStore store(Configuration{});
  Results results;
  ConfigReloader reloader(file, store, results.callback());
  EXPECT_TRUE(reloader.lastReloadOk());

  struct Step {
    std::string name;
    std::optional<std::string> content;  // nullopt: delete the file
    std::size_t errors;
    std::string originAfter;
    std::uint64_t generationAfter;
  };
  const std::vector<Step> steps = {
      {"good file is published", goodConfig("one"), 0, "one", 1},
      {"bad file is refused", kBadConfig, 2, "one", 1},
      {"fixed file is published", goodConfig("two"), 0, "two", 2},
      {"missing file is refused", std::nullopt, 1, "two", 2},
      {"empty file is refused", "", 1, "two", 2},
      {"three bytes that once made the YAML library loop are refused", ",w,", 1, "two", 2},
      {"aliases that expand past the limits are refused",
       mka::test::fixtureText("fuzz-regressions/config/billion-laughs"), 1, "two", 2},
      {"Kueue's kind is published too",
       test::kueueDoc("multiKueue: {origin: three}\nintegrations: {frameworks: [batch/job]}\n"), 0, "three", 3},
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    SCOPED_TRACE(s.name);
    if (s.content)
      mka::test::writeFile(file, *s.content);
    else
      std::filesystem::remove(file);
    const auto before = store.get();

    auto errors = reloader.reloadNow();

    EXPECT_EQ(errors.size(), s.errors) << joinErrors(errors);
    EXPECT_EQ(reloader.lastReloadOk(), s.errors == 0);
    EXPECT_EQ(store.get()->multiKueue.origin, s.originAfter);
    EXPECT_EQ(store.generation(), s.generationAfter);
    if (s.errors > 0) {
      EXPECT_EQ(store.get(), before);  // the very same snapshot stays in force
    }
    auto reported = results.all();
    ASSERT_EQ(reported.size(), i + 1);
    EXPECT_EQ(reported.back(), errors);
  }
}

TEST(ConfigReloader, WorksWithoutACallback) {
  mka::test::TempDir dir;
  const auto file = dir.write("config.yaml", goodConfig("solo"));
  ConfigStore store(Configuration{});
  ConfigReloader reloader(file, store, nullptr);
  EXPECT_TRUE(reloader.reloadNow().empty());
  EXPECT_EQ(store.get()->multiKueue.origin, "solo");
}

TEST(ConfigReloader, StopWithoutStartIsSafe) {
  mka::test::TempDir dir;
  ConfigStore store(Configuration{});
  ConfigReloader reloader(dir / "config.yaml", store, nullptr);
  reloader.stop();
  reloader.stop();
}

// Through the real file watcher, with the file updated the way kubelet updates a ConfigMap
// volume (a "..data" symlink swap), and awaited by polling the store, never by sleeping.
TEST(ConfigReloader, WatcherReloadsOnConfigMapUpdates) {
  mka::test::TempDir dir;
  mka::test::SecretVolume volume(dir / "config");
  volume.update({{"config.yaml", goodConfig("initial")}});
  const auto file = volume / "config.yaml";

  auto initial = loadConfigurationFile(file);
  ASSERT_TRUE(initial.ok()) << joinErrors(initial.errors);
  ConfigStore store(*initial.config);
  Results results;
  FileWatcher::Options options;
  options.pollInterval = 50ms;
  options.debounce = 10ms;
  ConfigReloader reloader(file, store, results.callback(), options);
  reloader.start();

  volume.update({{"config.yaml", goodConfig("updated")}});
  ASSERT_TRUE(mka::test::eventually([&] { return store.get()->multiKueue.origin == "updated"; }))
      << "origin is still " << store.get()->multiKueue.origin;
  EXPECT_TRUE(reloader.lastReloadOk());
  const auto goodGeneration = store.generation();

  volume.update({{"config.yaml", kBadConfig}});
  // Await the callback itself: lastReloadOk() flips before the callback runs, so waiting on it
  // and then reading the callback's results raced (seen in CI).
  ASSERT_TRUE(mka::test::eventually([&] {
    auto reported = results.all();
    return !reported.empty() && reported.back().size() == 2u;
  })) << "reported "
      << results.all().size() << " results";
  EXPECT_FALSE(reloader.lastReloadOk());
  EXPECT_EQ(store.get()->multiKueue.origin, "updated");
  EXPECT_EQ(store.generation(), goodGeneration);

  volume.update({{"config.yaml", goodConfig("recovered")}});
  ASSERT_TRUE(mka::test::eventually([&] { return store.get()->multiKueue.origin == "recovered"; }));
  EXPECT_TRUE(reloader.lastReloadOk());

  reloader.stop();
  const auto stoppedGeneration = store.generation();
  // After stop() nothing reloads any more; reloadNow() still works on demand.
  volume.update({{"config.yaml", goodConfig("after-stop")}});
  EXPECT_EQ(store.generation(), stoppedGeneration);
  EXPECT_TRUE(reloader.reloadNow().empty());
  EXPECT_EQ(store.get()->multiKueue.origin, "after-stop");
}

TEST(ConfigReloader, WatcherReloadsOnAtomicRename) {
  mka::test::TempDir dir;
  const auto file = dir.write("config.yaml", goodConfig("a"));
  ConfigStore store(Configuration{});
  FileWatcher::Options options;
  options.pollInterval = 50ms;
  options.debounce = 10ms;
  ConfigReloader reloader(file, store, nullptr, options);
  reloader.start();
  mka::test::writeFileAtomically(file, goodConfig("b"));
  EXPECT_TRUE(mka::test::eventually([&] { return store.get()->multiKueue.origin == "b"; }));
}

}  // namespace
}  // namespace mka::config
