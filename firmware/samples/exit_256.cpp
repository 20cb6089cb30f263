// exit_256: returns 256 from main without printing anything (issue 23.8).
// Expect: no console output; the summary shows exit code 256, and nicemu
// exits with 1, not with 256's low byte 0 (README, "Exit codes").

int main() {
  return 256;
}
