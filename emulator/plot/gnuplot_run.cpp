#include "plot/gnuplot_run.hpp"

#include "nicemu/error.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

namespace nicemu {

void run_gnuplot(const std::string &script_path) {
  const char *program = std::getenv("NICEMU_GNUPLOT");
  std::string gnuplot = program && *program ? program : "gnuplot";
  char *argv[] = {gnuplot.data(), const_cast<char *>(script_path.c_str()),
                  nullptr};
  pid_t pid = 0;
  int err =
      posix_spawnp(&pid, gnuplot.c_str(), nullptr, nullptr, argv, environ);
  if (err == ENOENT)
    throw Error("gnuplot is not installed (" + gnuplot +
                " was not found); nicemu plot draws with it: install the "
                "gnuplot-nox package (apt-get install gnuplot-nox)");
  if (err != 0)
    throw Error("cannot start " + gnuplot + ": " + std::strerror(err));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw Error("waiting for gnuplot: " + std::string(std::strerror(errno)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("gnuplot failed on " + script_path +
                " (its messages are above)");
}

} // namespace nicemu
