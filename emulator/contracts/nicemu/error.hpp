// Errors a user can cause (bad image, bad model, bad argument) are reported
// with nicemu::Error: a message that says what is wrong and where. Emulator
// bugs are assertions; firmware misbehaviour becomes a fault report.
#pragma once

#include <stdexcept>
#include <string>

namespace nicemu {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace nicemu
