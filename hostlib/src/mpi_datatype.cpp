// nicemu's MPI: datatypes (mpi_datatype.hpp) and the MPI_Type_* calls.
#include "mpi_datatype.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <cwchar>

namespace nicemu::mpi {

namespace {

struct Holder {
  std::shared_ptr<Type> type;
};

Table<Holder> types(Kind::Datatype, "datatype", MPI_ERR_TYPE);

struct BuiltinSpec {
  Basic basic;
  size_t size;
};

// In the order of their handles in mpi.h (index 1 on).
constexpr BuiltinSpec kBuiltins[] = {
    {Basic::Char, sizeof(char)},
    {Basic::SignedChar, sizeof(signed char)},
    {Basic::UnsignedChar, sizeof(unsigned char)},
    {Basic::Byte, 1},
    {Basic::WChar, sizeof(wchar_t)},
    {Basic::Short, sizeof(short)},
    {Basic::UnsignedShort, sizeof(unsigned short)},
    {Basic::Int, sizeof(int)},
    {Basic::Unsigned, sizeof(unsigned)},
    {Basic::Long, sizeof(long)},
    {Basic::UnsignedLong, sizeof(unsigned long)},
    {Basic::LongLong, sizeof(long long)},
    {Basic::UnsignedLongLong, sizeof(unsigned long long)},
    {Basic::Float, sizeof(float)},
    {Basic::Double, sizeof(double)},
    {Basic::LongDouble, sizeof(long double)},
    {Basic::Bool, sizeof(bool)},
    {Basic::Int8, 1},
    {Basic::Int16, 2},
    {Basic::Int32, 4},
    {Basic::Int64, 8},
    {Basic::Uint8, 1},
    {Basic::Uint16, 2},
    {Basic::Uint32, 4},
    {Basic::Uint64, 8},
    {Basic::Aint, sizeof(MPI_Aint)},
    {Basic::Offset, sizeof(MPI_Offset)},
    {Basic::Count, sizeof(MPI_Count)},
};
static_assert(sizeof kBuiltins / sizeof kBuiltins[0] == index_of(MPI_COUNT));

void add_block(std::vector<Block> &blocks, ptrdiff_t offset, size_t len) {
  if (len == 0)
    return;
  if (!blocks.empty() &&
      blocks.back().offset + ptrdiff_t(blocks.back().len) == offset) {
    blocks.back().len += len;
    return;
  }
  blocks.push_back({offset, len});
}

// A new type: `old` at each displacement of `disps` (bytes), in order.
std::shared_ptr<Type> replicate(const Type &old,
                                const std::vector<ptrdiff_t> &disps) {
  auto t = std::make_shared<Type>();
  t->basic = old.basic;
  if (disps.empty())
    return t;
  ptrdiff_t lo = disps[0], hi = disps[0];
  for (ptrdiff_t d : disps) {
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    for (const Block &b : old.blocks)
      add_block(t->blocks, d + b.offset, b.len);
  }
  t->size = disps.size() * old.size;
  t->lb = lo + old.lb;
  t->ub = hi + old.ub;
  return t;
}

void check_new(int count, MPI_Datatype *newtype) {
  if (count < 0)
    fail(MPI_ERR_COUNT, "a negative count: " + std::to_string(count));
  if (!newtype)
    fail(MPI_ERR_ARG, "a null newtype");
}

MPI_Datatype publish(std::shared_ptr<Type> t) {
  return types.add(std::make_unique<Holder>(Holder{std::move(t)}));
}

// Blocks of `blocklength` elements, `count` of them, `stride` bytes apart.
MPI_Datatype strided(int count, int blocklength, ptrdiff_t stride,
                     const Type &old) {
  if (blocklength < 0)
    fail(MPI_ERR_ARG, "a negative blocklength: " + std::to_string(blocklength));
  std::vector<ptrdiff_t> disps;
  disps.reserve(size_t(count) * size_t(blocklength));
  for (int j = 0; j < count; ++j)
    for (int k = 0; k < blocklength; ++k)
      disps.push_back(j * stride + k * old.extent());
  return publish(replicate(old, disps));
}

} // namespace

size_t basic_size(Basic b) {
  for (const BuiltinSpec &s : kBuiltins)
    if (s.basic == b)
      return s.size;
  return 0;
}

void datatypes_init() {
  types.clear();
  for (const BuiltinSpec &s : kBuiltins) {
    auto t = std::make_shared<Type>();
    t->size = s.size;
    t->ub = ptrdiff_t(s.size);
    t->blocks.push_back({0, s.size});
    t->basic = s.basic;
    t->committed = true;
    t->builtin = true;
    publish(std::move(t));
  }
}

void datatypes_finalize() {
  types.clear();
}

TypeRef type_of(MPI_Datatype handle) {
  return types.get(handle).type;
}

TypeRef committed_type(MPI_Datatype handle) {
  TypeRef t = type_of(handle);
  if (!t->committed)
    fail(MPI_ERR_TYPE, "the datatype is not committed (MPI_Type_commit)");
  return t;
}

void pack(const void *buf, int count, const Type &type, uint8_t *out) {
  auto *base = static_cast<const uint8_t *>(buf);
  for (int i = 0; i < count; ++i, base += type.extent())
    for (const Block &b : type.blocks) {
      std::memcpy(out, base + b.offset, b.len);
      out += b.len;
    }
}

void unpack(const uint8_t *in, size_t bytes, void *buf, int count,
            const Type &type) {
  auto *base = static_cast<uint8_t *>(buf);
  for (int i = 0; i < count && bytes; ++i, base += type.extent())
    for (const Block &b : type.blocks) {
      size_t n = std::min(b.len, bytes);
      std::memcpy(base + b.offset, in, n);
      in += n;
      bytes -= n;
      if (!bytes)
        return;
    }
}

Packed::Packed(const void *buf, int count, const Type &type)
    : size_(size_t(count) * type.size) {
  if (type.contiguous()) {
    data_ = static_cast<const uint8_t *>(buf);
    return;
  }
  copy_.resize(size_);
  pack(buf, count, type, copy_.data());
  data_ = copy_.data();
}

} // namespace nicemu::mpi

using namespace nicemu::mpi;

extern "C" {

int MPI_Type_contiguous(int count, MPI_Datatype oldtype,
                        MPI_Datatype *newtype) {
  return call("MPI_Type_contiguous", on_world(), [&] {
    require_running();
    check_new(count, newtype);
    TypeRef old = type_of(oldtype);
    *newtype = strided(1, count, 0, *old);
  });
}

int MPI_Type_vector(int count, int blocklength, int stride,
                    MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return call("MPI_Type_vector", on_world(), [&] {
    require_running();
    check_new(count, newtype);
    TypeRef old = type_of(oldtype);
    *newtype = strided(count, blocklength, stride * old->extent(), *old);
  });
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                            MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return call("MPI_Type_create_hvector", on_world(), [&] {
    require_running();
    check_new(count, newtype);
    TypeRef old = type_of(oldtype);
    *newtype = strided(count, blocklength, stride, *old);
  });
}

int MPI_Type_commit(MPI_Datatype *datatype) {
  return call("MPI_Type_commit", on_world(), [&] {
    require_running();
    if (!datatype)
      fail(MPI_ERR_ARG, "a null datatype pointer");
    types.get(*datatype).type->committed = true;
  });
}

int MPI_Type_free(MPI_Datatype *datatype) {
  return call("MPI_Type_free", on_world(), [&] {
    require_running();
    if (!datatype)
      fail(MPI_ERR_ARG, "a null datatype pointer");
    if (type_of(*datatype)->builtin)
      fail(MPI_ERR_TYPE, "a predefined datatype cannot be freed");
    // Operations under way hold their own reference.
    types.remove(*datatype);
    *datatype = MPI_DATATYPE_NULL;
  });
}

int MPI_Type_size(MPI_Datatype datatype, int *size) {
  return call("MPI_Type_size", on_world(), [&] {
    require_running();
    if (!size)
      fail(MPI_ERR_ARG, "a null size");
    size_t s = type_of(datatype)->size;
    *size = s > size_t(INT_MAX) ? MPI_UNDEFINED : int(s);
  });
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent) {
  return call("MPI_Type_get_extent", on_world(), [&] {
    require_running();
    if (!lb || !extent)
      fail(MPI_ERR_ARG, "a null lb or extent");
    TypeRef t = type_of(datatype);
    *lb = t->lb;
    *extent = t->extent();
  });
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  return call("MPI_Get_count", on_world(), [&] {
    require_running();
    if (!status || status == MPI_STATUS_IGNORE || !count)
      fail(MPI_ERR_ARG, "a null status or count");
    size_t size = type_of(datatype)->size;
    auto bytes = size_t(status->nicemu_bytes);
    if (size == 0)
      *count = bytes == 0 ? 0 : MPI_UNDEFINED;
    else if (bytes % size || bytes / size > size_t(INT_MAX))
      *count = MPI_UNDEFINED;
    else
      *count = int(bytes / size);
  });
}

} // extern "C"
