#include "mka/common/file_watcher.h"
#include "mka/common/log.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "mka/common/errors.h"
#include "mka/common/thread_cache.h"
#include "mka/common/thread_name.h"
#include "mka/common/unique_fd.h"

namespace mka {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

std::shared_ptr<spdlog::logger> watcherLogger() {
  static const std::shared_ptr<spdlog::logger> instance = namedLogger("file-watcher");
  return instance;
}

// What "the file changed" means: the symlink chain now ends elsewhere (kubelet's "..data"
// swap), or the bytes differ. mtime and size alone miss a same-second same-size rewrite.
struct Fingerprint {
  bool exists = false;
  std::string target;
  std::uintmax_t size = 0;
  std::int64_t mtimeNs = 0;
  std::uint64_t hash = 0;
  bool operator==(const Fingerprint&) const = default;
};

std::uint64_t fnv1a(std::istream& in) {
  std::uint64_t h = 14695981039346656037ull;
  std::array<char, 8192> buf{};
  while (in) {
    in.read(buf.data(), buf.size());
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[static_cast<std::size_t>(i)]);
      h *= 1099511628211ull;
    }
  }
  return h;
}

Fingerprint fingerprintOf(const fs::path& file) {
  Fingerprint fp;
  std::error_code ec;
  const fs::path target = fs::canonical(file, ec);
  if (ec) return fp;  // missing, or a dangling link in the middle of a swap
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return fp;
  std::ifstream in(target, std::ios::binary);
  if (!in) return fp;
  fp.exists = true;
  fp.target = target.string();
  fp.size = static_cast<std::uintmax_t>(st.st_size);
  fp.mtimeNs = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  fp.hash = fnv1a(in);
  return fp;
}

// The directories whose entries decide what `file` resolves to: its own parent (where kubelet
// renames "..data") and the parent of its current target (where an in-place write happens).
std::set<std::string> directoriesOf(const fs::path& file) {
  std::set<std::string> dirs;
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec);
  if (!ec) dirs.insert(absolute.parent_path().string());
  const fs::path target = fs::canonical(file, ec);
  if (!ec) dirs.insert(target.parent_path().string());
  return dirs;
}

constexpr std::uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY |
                                     IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

}  // namespace

struct FileWatcher::Impl {
  std::vector<fs::path> files;
  std::function<void()> onChange;
  Options options;

  UniqueFd stopFd;
  UniqueFd inotifyFd;
  std::map<std::string, int> watches;  // directory -> inotify watch descriptor
  std::vector<Fingerprint> baseline;   // what the last callback (or start) saw
  std::atomic<std::uint64_t> checks{0};
  std::thread thread;

  std::vector<Fingerprint> snapshot() {
    std::vector<Fingerprint> out;
    out.reserve(files.size());
    for (const auto& f : files) out.push_back(fingerprintOf(f));
    checks.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  // Follows the symlink chains: after a swap the target directory is a new one.
  void refreshWatches() {
    if (inotifyFd.get() < 0) return;
    std::set<std::string> wanted;
    for (const auto& f : files) wanted.merge(directoriesOf(f));
    for (const auto& dir : wanted) {
      if (watches.contains(dir)) continue;
      const int wd = ::inotify_add_watch(inotifyFd.get(), dir.c_str(), kWatchMask);
      if (wd >= 0) watches.emplace(dir, wd);  // a missing directory is left to the poll
    }
    for (auto it = watches.begin(); it != watches.end();) {
      if (wanted.contains(it->first)) {
        ++it;
        continue;
      }
      const int wd = it->second;
      it = watches.erase(it);
      // Two paths of one directory share a descriptor; keep it while either is wanted.
      const bool shared = std::any_of(watches.begin(), watches.end(), [wd](const auto& w) { return w.second == wd; });
      if (!shared) ::inotify_rm_watch(inotifyFd.get(), wd);
    }
  }

  bool drainInotify() {
    alignas(inotify_event) std::array<char, 4096> buf{};
    bool any = false;
    for (;;) {
      const ssize_t n = ::read(inotifyFd.get(), buf.data(), buf.size());
      if (n > 0) {
        any = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return any;  // EAGAIN: drained
    }
  }

  void fire() {
    try {
      onChange();
    } catch (const std::exception& e) {
      log::error(*watcherLogger(), "file change handler failed", {{"error", e.what()}});
    } catch (...) {
      log::error(*watcherLogger(), "file change handler failed", {{"error", "unknown exception"}});
    }
  }

  void run() {
    const auto debounce = std::max(options.debounce, std::chrono::milliseconds{0});
    const auto pollInterval = std::max(options.pollInterval, std::chrono::milliseconds{1});
    // A steady stream of writes must not postpone the callback forever.
    const auto maxDelay = std::max(debounce * 10, std::chrono::milliseconds{1});
    auto nextPoll = SteadyClock::now() + pollInterval;
    constexpr auto kNever = SteadyClock::time_point::max();
    auto pendingSince = kNever;  // first unreported sign of a change
    auto deadline = kNever;      // when to look again and report

    auto schedule = [&](SteadyClock::time_point now) {
      if (pendingSince == kNever) pendingSince = now;
      deadline = std::min(now + debounce, pendingSince + maxDelay);
    };

    for (;;) {
      auto now = SteadyClock::now();
      const auto wakeAt = std::min(deadline, nextPoll);
      const auto waitMs =
          std::chrono::ceil<std::chrono::milliseconds>(std::max(wakeAt - now, SteadyClock::duration::zero()));
      std::array<pollfd, 2> fds{pollfd{stopFd.get(), POLLIN, 0}, pollfd{inotifyFd.get(), POLLIN, 0}};
      const nfds_t count = inotifyFd.get() >= 0 ? 2 : 1;
      const int ready = ::poll(fds.data(), count, static_cast<int>(std::min<std::int64_t>(waitMs.count(), 1 << 30)));
      if (ready < 0 && errno != EINTR) {
        log::error(*watcherLogger(), "poll failed, file watching stopped", {{"error", std::strerror(errno)}});
        return;
      }
      if (fds[0].revents != 0) return;
      now = SteadyClock::now();
      if (count == 2 && fds[1].revents != 0 && drainInotify()) schedule(now);
      if (now >= nextPoll) {
        nextPoll = now + pollInterval;
        refreshWatches();
        if (snapshot() != baseline && deadline == kNever) schedule(now);
      }
      if (now >= deadline) {
        deadline = kNever;
        pendingSince = kNever;
        refreshWatches();
        auto current = snapshot();
        if (current != baseline) {
          baseline = std::move(current);
          fire();
        }
      }
    }
  }
};

FileWatcher::FileWatcher(std::vector<std::filesystem::path> files, std::function<void()> onChange)
    : FileWatcher(std::move(files), std::move(onChange), Options{}) {}

FileWatcher::FileWatcher(std::vector<std::filesystem::path> files, std::function<void()> onChange, Options options)
    : impl_(std::make_unique<Impl>()) {
  impl_->files = std::move(files);
  impl_->onChange = std::move(onChange);
  impl_->options = options;
}

FileWatcher::~FileWatcher() { stop(); }

void FileWatcher::start() {
  Impl& impl = *impl_;
  if (impl.thread.joinable()) return;
  impl.stopFd = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (impl.stopFd.get() < 0) throw Error(std::string("file watcher: eventfd failed: ") + std::strerror(errno));
  if (impl.options.useInotify) {
    impl.inotifyFd = UniqueFd(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (impl.inotifyFd.get() < 0) {
      log::warn(*watcherLogger(), "inotify unavailable, falling back to polling",
                {{"error", std::strerror(errno)}, {"intervalMs", impl.options.pollInterval.count()}});
    }
  }
  impl.watches.clear();
  impl.refreshWatches();  // before the baseline, so no change can slip between the two
  impl.baseline = impl.snapshot();
  impl.thread = std::thread([&impl] {
    nameThisThread("file-watcher");
    disableThreadCache();  // a poll now and then
    impl.run();
  });
}

void FileWatcher::stop() {
  Impl& impl = *impl_;
  if (!impl.thread.joinable()) return;
  const std::uint64_t one = 1;
  while (::write(impl.stopFd.get(), &one, sizeof one) < 0 && errno == EINTR) {
  }
  impl.thread.join();
  impl.inotifyFd.reset();
  impl.stopFd.reset();
  impl.watches.clear();
}

std::uint64_t FileWatcher::checks() const { return impl_->checks.load(std::memory_order_relaxed); }

}  // namespace mka
