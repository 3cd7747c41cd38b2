// serve(): runs the Service until SIGTERM/SIGINT.
#include <csignal>
#include <pthread.h>

#include <spdlog/spdlog.h>

#include "mka/app/service.h"
#include "mka/common/errors.h"

namespace mka::app {

int serve(const ServeOptions& options) {
  // Block the stop signals before any thread starts (threads inherit the mask), then wait for
  // them synchronously here: no async-signal-safety puzzles in a handler.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  // A client that disconnects mid-response must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  try {
    Service service(options);
    service.start();
    int signal = 0;
    sigwait(&stopSignals, &signal);
    spdlog::info("received signal={}, stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT");
    service.stop();
    return 0;
  } catch (const ValidationError& e) {
    spdlog::error("configuration is invalid, refusing to start file={} errors={}",
                  options.configFile ? options.configFile->string() : "", e.errors().size());
    for (const auto& error : e.errors()) spdlog::error("{}", error.toString());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("cannot start: {}", e.what());
    return 1;
  }
}

}  // namespace mka::app
