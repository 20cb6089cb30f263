// nicemu's MPI: the predefined reduction operations (mpi_ops.hpp). MPI-3.1
// 5.9.2 says which operation applies to which group of types: MIN and MAX
// to integers and floating point; SUM and PROD to those; the logical ones
// to integers and C_BOOL; the bitwise ones to integers and MPI_BYTE.
#include "mpi_ops.hpp"

#include <cstdint>
#include <cwchar>

namespace nicemu::mpi {

namespace {

enum class Group { Integer, Floating, Logical, Byte, Other };

Group group_of(Basic b) {
  switch (b) {
  case Basic::Float:
  case Basic::Double:
  case Basic::LongDouble:
    return Group::Floating;
  case Basic::Bool:
    return Group::Logical;
  case Basic::Byte:
    return Group::Byte;
  case Basic::None:
  case Basic::WChar:
    return Group::Other;
  default:
    return Group::Integer; // the C integers, MPI_CHAR, the fixed-size
                           // ones, MPI_AINT, MPI_OFFSET, MPI_COUNT
  }
}

bool applies(MPI_Op op, Group g) {
  switch (op) {
  case MPI_MAX:
  case MPI_MIN:
  case MPI_SUM:
  case MPI_PROD:
    return g == Group::Integer || g == Group::Floating;
  case MPI_LAND:
  case MPI_LOR:
  case MPI_LXOR:
    return g == Group::Integer || g == Group::Logical;
  case MPI_BAND:
  case MPI_BOR:
  case MPI_BXOR:
    return g == Group::Integer || g == Group::Byte;
  default:
    return false;
  }
}

template <class T, class F>
void each(void *inout, const void *in, size_t n, F f) {
  auto *a = static_cast<T *>(inout);
  auto *b = static_cast<const T *>(in);
  for (size_t i = 0; i < n; ++i)
    a[i] = f(a[i], b[i]);
}

template <class T>
void arithmetic(MPI_Op op, void *inout, const void *in, size_t n) {
  switch (op) {
  case MPI_MAX:
    return each<T>(inout, in, n, [](T a, T b) { return a < b ? b : a; });
  case MPI_MIN:
    return each<T>(inout, in, n, [](T a, T b) { return b < a ? b : a; });
  case MPI_SUM:
    return each<T>(inout, in, n, [](T a, T b) { return T(a + b); });
  case MPI_PROD:
    return each<T>(inout, in, n, [](T a, T b) { return T(a * b); });
  case MPI_LAND:
    return each<T>(inout, in, n, [](T a, T b) { return T(a && b); });
  case MPI_LOR:
    return each<T>(inout, in, n, [](T a, T b) { return T(a || b); });
  case MPI_LXOR:
    return each<T>(inout, in, n, [](T a, T b) { return T(!a != !b); });
  }
}

template <class T>
void integer(MPI_Op op, void *inout, const void *in, size_t n) {
  switch (op) {
  case MPI_BAND:
    return each<T>(inout, in, n, [](T a, T b) { return T(a & b); });
  case MPI_BOR:
    return each<T>(inout, in, n, [](T a, T b) { return T(a | b); });
  case MPI_BXOR:
    return each<T>(inout, in, n, [](T a, T b) { return T(a ^ b); });
  default:
    return arithmetic<T>(op, inout, in, n);
  }
}

} // namespace

void check_op(MPI_Op op, Basic basic) {
  if (!is_kind(op, Kind::Op) || index_of(op) == 0 ||
      index_of(op) > index_of(MPI_NO_OP))
    fail(MPI_ERR_OP, "an invalid operation handle");
  if (op == MPI_REPLACE || op == MPI_NO_OP)
    fail(MPI_ERR_OP, "MPI_REPLACE and MPI_NO_OP are for accumulate only");
  if (!applies(op, group_of(basic)))
    fail(MPI_ERR_OP, "the operation does not apply to this datatype");
}

void apply_op(MPI_Op op, Basic basic, void *inout, const void *in, size_t n) {
  switch (basic) {
  case Basic::Char:
    return integer<char>(op, inout, in, n);
  case Basic::SignedChar:
  case Basic::Int8:
    return integer<int8_t>(op, inout, in, n);
  case Basic::UnsignedChar:
  case Basic::Byte:
  case Basic::Uint8:
    return integer<uint8_t>(op, inout, in, n);
  case Basic::Short:
  case Basic::Int16:
    return integer<int16_t>(op, inout, in, n);
  case Basic::UnsignedShort:
  case Basic::Uint16:
    return integer<uint16_t>(op, inout, in, n);
  case Basic::Int:
  case Basic::Int32:
    return integer<int32_t>(op, inout, in, n);
  case Basic::Unsigned:
  case Basic::Uint32:
    return integer<uint32_t>(op, inout, in, n);
  case Basic::Long:
    return integer<long>(op, inout, in, n);
  case Basic::UnsignedLong:
    return integer<unsigned long>(op, inout, in, n);
  case Basic::LongLong:
  case Basic::Int64:
  case Basic::Offset:
  case Basic::Count:
    return integer<long long>(op, inout, in, n);
  case Basic::UnsignedLongLong:
  case Basic::Uint64:
    return integer<unsigned long long>(op, inout, in, n);
  case Basic::Aint:
    return integer<MPI_Aint>(op, inout, in, n);
  case Basic::Bool:
    return arithmetic<bool>(op, inout, in, n);
  case Basic::Float:
    return arithmetic<float>(op, inout, in, n);
  case Basic::Double:
    return arithmetic<double>(op, inout, in, n);
  case Basic::LongDouble:
    return arithmetic<long double>(op, inout, in, n);
  default:
    fail(MPI_ERR_OP, "the operation does not apply to this datatype");
  }
}

} // namespace nicemu::mpi
