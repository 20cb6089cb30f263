#include "cli/stop_signals.hpp"

#include <cassert>
#include <csignal>

namespace nicemu::cli {

namespace {

// What the handler sets: a signal handler can reach no object but a global.
StopRequest stop_request;
bool installed = false;
struct sigaction previous_int, previous_term;

// The first signal asks for a stop. A second one gets the default action:
// it is blocked while its handler runs, so raising it here delivers it
// (and ends the process) as soon as the handler returns. Both calls are
// async-signal-safe.
extern "C" void on_stop_signal(int signal) {
  if (stop_request.requested()) {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigaction(signal, &default_action, nullptr);
    raise(signal);
    return;
  }
  stop_request.request(signal);
}

} // namespace

StopSignals::StopSignals() {
  assert(!installed && "one StopSignals at a time");
  installed = true;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a write to a pipe or a waitpid goes on as if nothing
  // happened. The run's waits (poll) are bounded, and see the request
  // within 100 ms.
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
  installed = false;
}

const StopRequest &StopSignals::request() const {
  return stop_request;
}

std::string StopSignals::signal_name(int signal) {
  switch (signal) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  default:
    return "signal " + std::to_string(signal);
  }
}

} // namespace nicemu::cli
