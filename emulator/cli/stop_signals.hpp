// SIGINT and SIGTERM as a clean stop (README, "Exit codes"): while a
// StopSignals lives, the first of them sets its StopRequest, which the run
// honours before its next round of slices (Simulation::set_stop_request);
// the command then stops the host processes, closes its files, prints its
// summary and exits with 128 + the signal. A second one, of either kind,
// gets the signal's default action: the process ends at once.
#pragma once

#include "sim/stop_request.hpp"

#include <string>

namespace nicemu::cli {

class StopSignals {
public:
  // Installs the handlers; the previous ones come back when it goes. One
  // at a time.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;

  const StopRequest &request() const;
  bool requested() const { return request().requested(); }
  // 128 + the signal: 130 for SIGINT, 143 for SIGTERM.
  int exit_code() const { return 128 + request().signal(); }
  // "SIGINT", "SIGTERM".
  std::string name() const { return signal_name(request().signal()); }
  static std::string signal_name(int signal);
};

} // namespace nicemu::cli
