// hello: prints "hello from node N of M\n", N and M read from SYS_NODE and
// SYS_NODES, and returns 0 from main.
// Expect: exactly that console line (e.g. "hello from node 0 of 1\n" on a
// single card) and exit code 0.
#include "nicemu/fw.hpp"

int main() {
  nicemu::fw::printf("hello from node %u of %u\n",
                     static_cast<unsigned>(nicemu::fw::node_id()),
                     static_cast<unsigned>(nicemu::fw::node_count()));
  return 0;
}
