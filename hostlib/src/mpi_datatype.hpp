// nicemu's MPI: datatypes. A type is its size, its bounds and its data as
// blocks (offset, length) of one element, merged where adjacent; derived
// types (contiguous, vector, hvector) are flattened when created, so a
// type never depends on the types it was made from. Communication packs
// non-contiguous data into a contiguous buffer in the library and unpacks
// it on arrival (docs/mpi.md, "Datatypes").
#pragma once

#include "mpi_base.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace nicemu::mpi {

// The basic C types reductions work on.
enum class Basic : uint8_t {
  None, // a derived type of several basic types
  Char,
  SignedChar,
  UnsignedChar,
  Byte,
  WChar,
  Short,
  UnsignedShort,
  Int,
  Unsigned,
  Long,
  UnsignedLong,
  LongLong,
  UnsignedLongLong,
  Float,
  Double,
  LongDouble,
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Aint,
  Offset,
  Count,
};

struct Block {
  ptrdiff_t offset;
  size_t len;
};

struct Type {
  size_t size = 0;           // bytes of data in one element
  ptrdiff_t lb = 0, ub = 0;  // extent = ub - lb
  std::vector<Block> blocks; // one element's data, in type-map order
  Basic basic = Basic::None; // every byte of it is of this basic type
  bool committed = false;
  bool builtin = false;

  ptrdiff_t extent() const { return ub - lb; }
  // One block at offset 0 as long as the extent: `count` elements are
  // `count * size` bytes at the buffer.
  bool contiguous() const {
    return blocks.size() <= 1 && lb == 0 && ptrdiff_t(size) == extent() &&
           (blocks.empty() || blocks[0].offset == 0);
  }
};
using TypeRef = std::shared_ptr<const Type>;

// The type of a handle, checked: valid, and committed (for communication).
TypeRef type_of(MPI_Datatype handle);
TypeRef committed_type(MPI_Datatype handle);
size_t basic_size(Basic b);

// count elements of `type` at `buf` <-> a contiguous stream of count *
// size bytes. unpack takes at most `bytes` (a shorter message fills the
// first elements; the rest is left alone).
void pack(const void *buf, int count, const Type &type, uint8_t *out);
void unpack(const uint8_t *in, size_t bytes, void *buf, int count,
            const Type &type);

// count elements as a contiguous buffer: `buf` itself when the type is
// contiguous, else a packed copy (held by the object).
class Packed {
public:
  Packed(const void *buf, int count, const Type &type);
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }

private:
  std::vector<uint8_t> copy_;
  const uint8_t *data_;
  size_t size_;
};

void datatypes_init();
void datatypes_finalize();

} // namespace nicemu::mpi
