// Errors a user can cause (bad image, bad model, bad argument) are reported
// with nicemu::Error: a message that says what is wrong and where. Emulator
// bugs are assertions; firmware misbehaviour becomes a fault report.
#pragma once

#include <stdexcept>
#include <string>

namespace nicemu {

// What kind of failure an Error reports, for code that reacts to it rather
// than showing the message: the host library turns it into its own status
// (nicemu::host::Error::code(), the C API's NICEMU_E* codes). Most errors
// are plain failures whose message is for a person.
enum class ErrorKind {
  Failure,     // anything else: the message says what went wrong
  BadArgument, // the caller's mistake: a bad value, address or size
  OutOfMemory, // registered memory or registration slots are used up
  NotRun,      // a host program has no channel to the emulator (it was not
               //   started by `nicemu run`, or the channel cannot be opened)
  Stopped,     // the emulator stopped or the cluster is stopping
  State,       // a call out of order
};

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message,
                 ErrorKind kind = ErrorKind::Failure)
      : std::runtime_error(message), kind_(kind) {}
  explicit Error(const char *message, ErrorKind kind = ErrorKind::Failure)
      : std::runtime_error(message), kind_(kind) {}

  ErrorKind kind() const noexcept { return kind_; }

private:
  ErrorKind kind_;
};

} // namespace nicemu
