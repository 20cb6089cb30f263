// nicemu's MPI (docs/mpi.md): what every part of the library shares: MPI
// errors raised as exceptions inside the library and turned into return
// codes or an abort at the C boundary (call()), handles and their tables,
// and the library's state.
#pragma once

#include "nicemu/mpi/mpi.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace nicemu::mpi {

// An MPI error inside the library: the code and what exactly went wrong.
struct Failure {
  int code;
  std::string what;
};
[[noreturn]] void fail(int code, std::string what);

// ---- Handles: a kind in the top byte, an index below (mpi.h) -------------

enum class Kind : uint32_t {
  Comm = 0x31,
  Group = 0x32,
  Datatype = 0x33,
  Op = 0x34,
  Request = 0x35,
  Win = 0x36,
  Errhandler = 0x37,
  Info = 0x38,
};

constexpr int make_handle(Kind k, uint32_t index) {
  return int((uint32_t(k) << 24) | index);
}
constexpr bool is_kind(int h, Kind k) {
  return (uint32_t(h) >> 24) == uint32_t(k);
}
constexpr uint32_t index_of(int h) {
  return uint32_t(h) & 0xFFFFFFu;
}

// Objects of one kind by handle; index 0 is the null handle, builtins come
// first and are never removed, freed indices are reused.
template <class T> class Table {
public:
  Table(Kind kind, const char *noun, int error)
      : kind_(kind), noun_(noun), error_(error), slots_(1) {}

  int add(std::unique_ptr<T> object) {
    uint32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
      slots_[i] = std::move(object);
    } else {
      i = uint32_t(slots_.size());
      if (i > 0xFFFFFFu)
        fail(MPI_ERR_NO_MEM, std::string("too many ") + noun_ + "s");
      slots_.push_back(std::move(object));
    }
    return make_handle(kind_, i);
  }
  // The object, or nullptr for a handle that names none.
  T *find(int h) const {
    if (!is_kind(h, kind_) || index_of(h) >= slots_.size())
      return nullptr;
    return slots_[index_of(h)].get();
  }
  // The object; raises the kind's error for the null or a bad handle.
  T &get(int h) const {
    if (T *t = find(h))
      return *t;
    fail(error_,
         std::string(is_kind(h, kind_) && index_of(h) == 0 ? "the null "
                                                           : "an invalid ") +
             noun_ + " handle (" + hex(h) + ")");
  }
  std::unique_ptr<T> remove(int h) {
    std::unique_ptr<T> out = std::move(slots_[index_of(h)]);
    free_.push_back(index_of(h));
    return out;
  }
  void clear() {
    slots_.resize(1);
    free_.clear();
  }

  static std::string hex(int h) {
    char s[16];
    std::snprintf(s, sizeof s, "0x%08x", unsigned(h));
    return s;
  }

private:
  Kind kind_;
  const char *noun_;
  int error_;
  std::vector<std::unique_ptr<T>> slots_;
  std::vector<uint32_t> free_;
};

// ---- The library's state ------------------------------------------------

enum class Phase { Before, Running, Finalized };
Phase phase();
void set_phase(Phase p);
// Raises MPI_ERR_OTHER unless MPI_Init has run and MPI_Finalize has not.
void require_running();

// The error handler that an error in a call on this object goes to:
// MPI_ERRORS_ARE_FATAL or MPI_ERRORS_RETURN.
int comm_errhandler(MPI_Comm comm);
int win_errhandler(MPI_Win win);

// The name of an error code ("MPI_ERR_RANK").
const char *error_name(int code);
// Prints the error and ends the job (errors are fatal, MPI_Abort).
[[noreturn]] void abort_job(int status, const std::string &message);

// Runs `body` as the MPI function `name`; a Failure it raises goes to the
// error handler `handler()` chooses (called only then): the code is
// returned, or, with MPI_ERRORS_ARE_FATAL, the job ends with a message.
template <class Handler, class Body>
int call(const char *name, Handler handler, Body body) noexcept;

int handle_failure(const char *name, int errhandler, const Failure &f) noexcept;
// Failures of the layers below (the card stopping, no memory).
[[noreturn]] void internal_failure(const char *name, const char *what) noexcept;

template <class Handler, class Body>
int call(const char *name, Handler handler, Body body) noexcept {
  try {
    body();
    return MPI_SUCCESS;
  } catch (const Failure &f) {
    int eh = MPI_ERRORS_ARE_FATAL;
    try {
      eh = handler();
    } catch (...) {
    }
    return handle_failure(name, eh, f);
  } catch (const std::exception &e) {
    internal_failure(name, e.what());
  } catch (...) {
    internal_failure(name, "unknown exception");
  }
}

// Handlers for call(): the handler of a communicator, of a window, or of
// MPI_COMM_WORLD (errors not tied to an object).
inline auto on_comm(MPI_Comm c) {
  return [c] { return comm_errhandler(c); };
}
inline auto on_win(MPI_Win w) {
  return [w] { return win_errhandler(w); };
}
inline auto on_world() {
  return [] { return comm_errhandler(MPI_COMM_WORLD); };
}

} // namespace nicemu::mpi
