// variables: globals, arguments and locals of many types, for the
// debugger's print, info args and info locals
// (tests/e2e/test_debug_cli.cpp). The globals have external linkage so
// that the compiler keeps them in memory as they are written here.
// Expect: "variables: 42" and exit code 0.
#include "nicemu/fw.hpp"

namespace variables {

enum class Color : uint8_t { Red, Green = 5, Blue };

struct Flags {
  uint32_t ready : 1;
  uint32_t mode : 3;
  uint32_t count : 12;
};

struct Point {
  int16_t x, y;
};

struct Shape {
  const char *name;
  Point corners[2];
  Color color;
  Flags flags;
  bool filled;
};

Shape shape = {"square", {{-3, 4}, {10, -20}}, Color::Blue, {1, 5, 300}, true};
char label[16] = "hi";
int32_t grid[2][3] = {{1, 2, 3}, {4, 5, 6}};
uint32_t zeros[40];

int __attribute__((noinline)) combine(int left, int right, const Shape *s) {
  int total = left * right;
  for (int i = 0; i < 2; ++i)
    total += s->corners[i].x;
  return total - 7 + zeros[3] + uint32_t(grid[0][0]) - 1 + label[1] - 'i';
}

int (*handler)(int, int, const Shape *) = combine;

} // namespace variables

int main() {
  int value = variables::handler(6, 7, &variables::shape);
  nicemu::fw::printf("variables: %d\n", value);
  return value == 42 ? 0 : 1;
}
