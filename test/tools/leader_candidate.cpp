// A leader-election candidate as its own process, for the hand-over test in
// test/unit/kube/leader_process_test.cpp: runs a LeaderElector against a kubeconfig, prints
// "observed <holder>" and "leading <identity>" lines (flushed), and on SIGTERM releases the
// lease and exits 0.
#include <signal.h>

#include <cstdio>
#include <string>

#include "mka/kube/client.h"
#include "mka/kube/kubeconfig.h"
#include "mka/kube/leader_election.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s KUBECONFIG IDENTITY LEASE_NAME\n", argv[0]);
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts

  using namespace mka::kube;
  Client client(std::make_shared<RestClient>(restConfigFor(Kubeconfig::load(argv[1]))));
  LeaderElectionConfig config{.namespace_ = "default",
                              .name = argv[3],
                              .identity = argv[2],
                              .leaseDuration = std::chrono::seconds{10},
                              .renewDeadline = std::chrono::seconds{7},
                              .retryPeriod = std::chrono::milliseconds{100}};
  config.onStartedLeading = [&] {
    std::printf("leading %s\n", argv[2]);
    std::fflush(stdout);
  };
  config.onNewLeader = [](const std::string& holder) {
    std::printf("observed %s\n", holder.c_str());
    std::fflush(stdout);
  };
  LeaderElector elector(client, config);
  elector.start();
  int signal = 0;
  sigwait(&signals, &signal);
  elector.stop();
  std::printf("stopped\n");
  return 0;
}
