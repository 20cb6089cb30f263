// Runs gnuplot on a script file: the only program `nicemu plot` needs
// installed (Debian's gnuplot-nox has the svg and pngcairo terminals).
// NICEMU_GNUPLOT names another gnuplot.
#pragma once

#include <string>

namespace nicemu {

// Throws nicemu::Error when gnuplot is missing (naming the package) or
// fails.
void run_gnuplot(const std::string &script_path);

} // namespace nicemu
