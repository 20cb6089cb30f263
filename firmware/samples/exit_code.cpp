// exit_code: returns 3 from main without printing anything.
// Expect: no console output, exit code 3 (main's return value goes through
// the runtime's nicemu_exit into SYS_EXIT).

int main() {
  return 3;
}
