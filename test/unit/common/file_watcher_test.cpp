#include "mka/common/file_watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>

#include "support/eventually.h"
#include "support/secret_volume.h"
#include "support/temp_dir.h"

namespace mka {
namespace {

using namespace std::chrono_literals;
using test::eventually;

FileWatcher::Options fast(bool inotify = true) {
  FileWatcher::Options options;
  options.pollInterval = 20ms;
  options.debounce = 10ms;
  options.useInotify = inotify;
  return options;
}

// Inotify alone would report these within milliseconds; a poll interval this long proves it
// was inotify, not the safety net, that noticed.
FileWatcher::Options inotifyOnly() {
  FileWatcher::Options options;
  options.pollInterval = std::chrono::hours{1};
  options.debounce = 10ms;
  return options;
}

// Waits until the watcher has looked at the files `n` more times, so "no callback" is
// asserted after the watcher verifiably had the chance to fire.
void awaitChecks(const FileWatcher& watcher, std::uint64_t n) {
  const auto target = watcher.checks() + n;
  ASSERT_TRUE(eventually([&] { return watcher.checks() >= target; }));
}

struct ChangeCase {
  std::string name;
  bool inotify;
  friend void PrintTo(const ChangeCase& c, std::ostream* os) { *os << c.name; }
};

class FileWatcherChangeTest : public ::testing::TestWithParam<ChangeCase> {
 protected:
  FileWatcher::Options options() const { return GetParam().inotify ? inotifyOnly() : fast(false); }
};

TEST_P(FileWatcherChangeTest, PlainRewriteFires) {
  test::TempDir dir;
  const auto file = dir.write("config.yaml", "a: 1\n");
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {file}, [&] { ++calls; }, options());
  watcher.start();

  test::writeFile(file, "a: 2\n");
  EXPECT_TRUE(eventually([&] { return calls == 1; }));
}

TEST_P(FileWatcherChangeTest, AtomicRenameFires) {
  test::TempDir dir;
  const auto file = dir.write("config.yaml", "a: 1\n");
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {file}, [&] { ++calls; }, options());
  watcher.start();

  test::writeFileAtomically(file, "a: 2\n");
  EXPECT_TRUE(eventually([&] { return calls == 1; }));
}

TEST_P(FileWatcherChangeTest, KubeletSymlinkSwapFires) {
  test::TempDir dir;
  test::SecretVolume volume(dir / "secret");
  volume.update({{"tls.crt", "cert v1"}, {"tls.key", "key v1"}});
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {volume / "tls.crt", volume / "tls.key"}, [&] { ++calls; }, options());
  watcher.start();

  volume.update({{"tls.crt", "cert v2"}, {"tls.key", "key v2"}});
  EXPECT_TRUE(eventually([&] { return calls == 1; }));
  // The next swap lands in a directory that did not exist at start(): still seen.
  volume.update({{"tls.crt", "cert v3"}, {"tls.key", "key v3"}});
  EXPECT_TRUE(eventually([&] { return calls == 2; }));
}

TEST_P(FileWatcherChangeTest, FileAppearingFires) {
  test::TempDir dir;
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {dir / "later.yaml"}, [&] { ++calls; }, options());
  watcher.start();

  dir.write("later.yaml", "x");
  EXPECT_TRUE(eventually([&] { return calls == 1; }));
}

INSTANTIATE_TEST_SUITE_P(Detection, FileWatcherChangeTest,
                         ::testing::Values(ChangeCase{"Inotify", true}, ChangeCase{"PollOnly", false}),
                         [](const auto& info) { return info.param.name; });

TEST(FileWatcherTest, NoCallbackWhenNothingChanged) {
  test::TempDir dir;
  const auto file = dir.write("tls.crt", "same");
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {file}, [&] { ++calls; }, fast());
  watcher.start();

  awaitChecks(watcher, 3);
  EXPECT_EQ(calls, 0);
}

TEST(FileWatcherTest, UnrelatedFileInTheSameDirectoryDoesNotFire) {
  test::TempDir dir;
  const auto file = dir.write("tls.crt", "same");
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {file}, [&] { ++calls; }, inotifyOnly());
  watcher.start();

  const auto before = watcher.checks();
  dir.write("unrelated.txt", "noise");
  // The inotify event makes the watcher look; it must find nothing to report.
  ASSERT_TRUE(eventually([&] { return watcher.checks() > before; }));
  EXPECT_EQ(calls, 0);
}

TEST(FileWatcherTest, RewriteWithIdenticalContentDoesNotFire) {
  test::TempDir dir;
  const auto file = dir.write("config.yaml", "a: 1\n");
  std::atomic<int> calls{0};
  // Same bytes, same path, mtime put back: nothing a reader could notice changed.
  FileWatcher watcher(
      {file}, [&] { ++calls; }, fast());
  const auto mtime = std::filesystem::last_write_time(file);
  watcher.start();

  test::writeFile(file, "a: 1\n");
  std::filesystem::last_write_time(file, mtime);
  awaitChecks(watcher, 3);
  EXPECT_EQ(calls, 0);
}

TEST(FileWatcherTest, SameSizeSameMtimeContentChangeIsSeenByTheHash) {
  test::TempDir dir;
  const auto file = dir.write("config.yaml", "a: 1\n");
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {file}, [&] { ++calls; }, fast(false));
  const auto mtime = std::filesystem::last_write_time(file);
  watcher.start();

  test::writeFile(file, "a: 2\n");
  std::filesystem::last_write_time(file, mtime);
  EXPECT_TRUE(eventually([&] { return calls == 1; }));
}

TEST(FileWatcherTest, ChangesToSeveralFilesWithinTheDebounceGiveOneCallback) {
  test::TempDir dir;
  const auto cert = dir.write("tls.crt", "cert v1");
  const auto key = dir.write("tls.key", "key v1");
  std::atomic<int> calls{0};
  auto options = fast();
  options.debounce = 300ms;  // far longer than two consecutive writes take
  FileWatcher watcher(
      {cert, key}, [&] { ++calls; }, options);
  watcher.start();

  test::writeFile(cert, "cert v2");
  test::writeFile(key, "key v2");
  ASSERT_TRUE(eventually([&] { return calls >= 1; }));
  awaitChecks(watcher, 3);
  EXPECT_EQ(calls, 1);
}

TEST(FileWatcherTest, ThrowingCallbackDoesNotStopWatching) {
  test::TempDir dir;
  const auto file = dir.write("config.yaml", "1");
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {file},
      [&] {
        ++calls;
        throw std::runtime_error("handler failed");
      },
      fast());
  watcher.start();

  test::writeFile(file, "2");
  ASSERT_TRUE(eventually([&] { return calls == 1; }));
  test::writeFile(file, "3");
  EXPECT_TRUE(eventually([&] { return calls == 2; }));
}

TEST(FileWatcherTest, StopIsPromptEvenWithALongPollInterval) {
  test::TempDir dir;
  const auto file = dir.write("config.yaml", "1");
  FileWatcher::Options options;
  options.pollInterval = std::chrono::hours{1};
  options.debounce = std::chrono::hours{1};
  FileWatcher watcher(
      {file}, [] {}, options);
  watcher.start();
  test::writeFile(file, "2");  // a pending debounce must not hold stop() either

  auto stopped = std::async(std::launch::async, [&] { watcher.stop(); });
  EXPECT_EQ(stopped.wait_for(5s), std::future_status::ready);
}

TEST(FileWatcherTest, StartAndStopAreIdempotentAndRestartable) {
  test::TempDir dir;
  const auto file = dir.write("config.yaml", "1");
  std::atomic<int> calls{0};
  FileWatcher watcher(
      {file}, [&] { ++calls; }, fast());
  watcher.stop();
  watcher.start();
  watcher.start();
  watcher.stop();
  watcher.stop();

  test::writeFile(file, "2");  // while stopped: the new baseline at start() absorbs it
  watcher.start();
  awaitChecks(watcher, 3);
  EXPECT_EQ(calls, 0);
  test::writeFile(file, "3");
  EXPECT_TRUE(eventually([&] { return calls == 1; }));
}

}  // namespace
}  // namespace mka
