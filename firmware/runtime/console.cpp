// Console output: one byte per store to CONSOLE_TX.
#include "nicemu/fw.hpp"

namespace nicemu::fw {

void console_write(const char *data, size_t size) {
  for (size_t i = 0; i < size; ++i)
    console_putc(data[i]);
}

void console_write(const char *text) {
  while (*text)
    console_putc(*text++);
}

void puts(const char *text) {
  console_write(text);
  console_putc('\n');
}

} // namespace nicemu::fw
