// printf for the console and for buffers: integers, characters, strings.
// No floating point: the core has no FPU and firmware has no use for it.
#include "nicemu/fw.hpp"

namespace nicemu::fw {
namespace {

// Where formatted characters go: the console, or a bounded buffer.
struct Sink {
  char *buffer = nullptr; // nullptr: the console
  size_t size = 0;
  size_t length = 0; // characters produced, stored or not

  void put(char c) {
    if (!buffer)
      console_putc(c);
    else if (length + 1 < size)
      buffer[length] = c;
    ++length;
  }
  void put(const char *text, size_t count) {
    for (size_t i = 0; i < count; ++i)
      put(text[i]);
  }
  void fill(char c, size_t count) {
    for (size_t i = 0; i < count; ++i)
      put(c);
  }
};

// One conversion: %[-0][width][.precision][length]conversion
struct Spec {
  bool left = false;  // '-'
  bool zero = false;  // '0'
  size_t width = 0;   // minimum field width
  int precision = -1; // maximum characters of a %s
  int size = 0;       // 0 int, 1 long, 2 long long, 3 size_t
  char conversion = 0;
};

// va_list may be an array type; a struct lets helpers share one cursor.
struct Args {
  va_list list;
};

size_t length_of(const char *text, int limit) {
  size_t n = 0;
  while ((limit < 0 || n < static_cast<size_t>(limit)) && text[n])
    ++n;
  return n;
}

// Writes prefix (sign, "0x") and body into a field of spec.width.
void put_field(Sink &sink, const Spec &spec, const char *prefix,
               const char *body, size_t body_length) {
  size_t prefix_length = length_of(prefix, -1);
  size_t used = prefix_length + body_length;
  size_t padding = spec.width > used ? spec.width - used : 0;
  if (!spec.left && !spec.zero)
    sink.fill(' ', padding);
  sink.put(prefix, prefix_length);
  if (!spec.left && spec.zero)
    sink.fill('0', padding);
  sink.put(body, body_length);
  if (spec.left)
    sink.fill(' ', padding);
}

// Digits of value, most significant first, into out; returns how many.
size_t digits(uint64_t value, unsigned base, bool upper, char (&out)[24]) {
  const char *alphabet = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char reversed[24];
  size_t n = 0;
  do {
    // Stay on 32-bit division when the value allows: 64-bit is a call.
    uint32_t digit;
    if (value >> 32) {
      digit = static_cast<uint32_t>(value % base);
      value /= base;
    } else {
      uint32_t small = static_cast<uint32_t>(value);
      digit = small % base;
      value = small / base;
    }
    reversed[n++] = alphabet[digit];
  } while (value);
  for (size_t i = 0; i < n; ++i)
    out[i] = reversed[n - 1 - i];
  return n;
}

uint64_t unsigned_arg(const Spec &spec, Args &args) {
  switch (spec.size) {
  case 1:
    return va_arg(args.list, unsigned long);
  case 2:
    return va_arg(args.list, unsigned long long);
  case 3:
    return va_arg(args.list, size_t);
  default:
    return va_arg(args.list, unsigned int);
  }
}

int64_t signed_arg(const Spec &spec, Args &args) {
  switch (spec.size) {
  case 1:
    return va_arg(args.list, long);
  case 2:
    return va_arg(args.list, long long);
  case 3:
    return static_cast<int64_t>(va_arg(args.list, size_t));
  default:
    return va_arg(args.list, int);
  }
}

void put_integer(Sink &sink, Spec spec, Args &args) {
  char body[24];
  const char *prefix = "";
  uint64_t value;
  unsigned base = 10;
  switch (spec.conversion) {
  case 'd':
  case 'i': {
    int64_t number = signed_arg(spec, args);
    prefix = number < 0 ? "-" : "";
    value = number < 0 ? 0 - static_cast<uint64_t>(number) : number;
    break;
  }
  case 'p':
    value = reinterpret_cast<uintptr_t>(va_arg(args.list, void *));
    prefix = "0x";
    base = 16;
    spec.zero = true;
    spec.width = 10;
    break;
  default:
    value = unsigned_arg(spec, args);
    base = spec.conversion == 'u' ? 10 : 16;
  }
  size_t n = digits(value, base, spec.conversion == 'X', body);
  put_field(sink, spec, prefix, body, n);
}

// Parses the part of a conversion after '%'; returns the conversion char's
// position.
const char *parse_spec(const char *p, Spec &spec, Args &args) {
  for (;; ++p) {
    if (*p == '-')
      spec.left = true;
    else if (*p == '0')
      spec.zero = true;
    else
      break;
  }
  if (*p == '*') {
    int width = va_arg(args.list, int);
    spec.left = spec.left || width < 0;
    spec.width = static_cast<size_t>(width < 0 ? -width : width);
    ++p;
  }
  for (; *p >= '0' && *p <= '9'; ++p)
    spec.width = spec.width * 10 + static_cast<size_t>(*p - '0');
  if (*p == '.') {
    ++p;
    spec.precision = 0;
    if (*p == '*') {
      spec.precision = va_arg(args.list, int);
      ++p;
    }
    for (; *p >= '0' && *p <= '9'; ++p)
      spec.precision = spec.precision * 10 + (*p - '0');
  }
  for (; *p == 'l'; ++p)
    spec.size = spec.size < 2 ? spec.size + 1 : 2;
  if (*p == 'z') {
    spec.size = 3;
    ++p;
  }
  spec.conversion = *p;
  return p;
}

void put_conversion(Sink &sink, const Spec &spec, Args &args) {
  switch (spec.conversion) {
  case 'd':
  case 'i':
  case 'u':
  case 'x':
  case 'X':
  case 'p':
    put_integer(sink, spec, args);
    return;
  case 'c': {
    char c = static_cast<char>(va_arg(args.list, int));
    put_field(sink, spec, "", &c, 1);
    return;
  }
  case 's': {
    const char *text = va_arg(args.list, const char *);
    if (!text)
      text = "(null)";
    Spec plain = spec;
    plain.zero = false;
    put_field(sink, plain, "", text, length_of(text, spec.precision));
    return;
  }
  case '%':
    sink.put('%');
    return;
  default: // unknown: show it as written
    sink.put('%');
    sink.put(spec.conversion);
  }
}

void format(Sink &sink, const char *format, Args &args) {
  for (const char *p = format; *p; ++p) {
    if (*p != '%') {
      sink.put(*p);
      continue;
    }
    Spec spec;
    p = parse_spec(p + 1, spec, args);
    if (!*p)
      break;
    put_conversion(sink, spec, args);
  }
}

} // namespace

int vprintf(const char *format_text, va_list list) {
  Sink sink;
  Args args;
  va_copy(args.list, list);
  format(sink, format_text, args);
  va_end(args.list);
  return static_cast<int>(sink.length);
}

int printf(const char *format_text, ...) {
  va_list list;
  va_start(list, format_text);
  int n = vprintf(format_text, list);
  va_end(list);
  return n;
}

int vsnprintf(char *buffer, size_t size, const char *format_text,
              va_list list) {
  Sink sink{buffer, size};
  Args args;
  va_copy(args.list, list);
  format(sink, format_text, args);
  va_end(args.list);
  if (size > 0)
    buffer[sink.length < size ? sink.length : size - 1] = '\0';
  return static_cast<int>(sink.length);
}

int snprintf(char *buffer, size_t size, const char *format_text, ...) {
  va_list list;
  va_start(list, format_text);
  int n = vsnprintf(buffer, size, format_text, list);
  va_end(list);
  return n;
}

} // namespace nicemu::fw
