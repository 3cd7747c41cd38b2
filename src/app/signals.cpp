#include "mka/app/signals.h"

#include <pthread.h>

#include <csignal>

namespace mka::app {
namespace {

sigset_t stopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void blockStopSignals() {
  const auto set = stopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

const char* waitForStopSignal() {
  const auto set = stopSignals();
  int signal = 0;
  sigwait(&set, &signal);
  return signal == SIGTERM ? "SIGTERM" : "SIGINT";
}

}  // namespace mka::app
