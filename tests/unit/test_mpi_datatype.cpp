// nicemu's MPI without a card: datatypes flattened at creation and packed
// against a reference, the reductions' operations, and errors returned
// through MPI_ERRORS_RETURN (hostlib/src/mpi_datatype.hpp, mpi_ops.hpp).
#include "mpi_datatype.hpp"
#include "mpi_ops.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <vector>

using namespace nicemu::mpi;

namespace {

// The datatype calls need MPI to be running; they need no card.
struct Running {
  Running() {
    datatypes_init();
    set_phase(Phase::Running);
  }
  ~Running() {
    datatypes_finalize();
    set_phase(Phase::Before);
  }
};

} // namespace

TEST_CASE("mpi datatypes: a vector is flattened into merged blocks with "
          "MPI's bounds") {
  Running mpi;
  MPI_Datatype v = MPI_DATATYPE_NULL, cols = MPI_DATATYPE_NULL;
  REQUIRE(MPI_Type_vector(3, 2, 4, MPI_INT, &v) == MPI_SUCCESS);
  TypeRef t = type_of(v);
  CHECK(t->size == 24);
  CHECK(t->lb == 0);
  CHECK(t->extent() == (2 * 4 + 2) * 4);
  REQUIRE(t->blocks.size() == 3);
  CHECK(t->blocks[1].offset == 16);
  CHECK(t->blocks[1].len == 8);
  CHECK(!t->committed);
  CHECK(t->basic == Basic::Int);
  // A vector whose blocks touch is one block: contiguous.
  REQUIRE(MPI_Type_vector(4, 2, 2, MPI_DOUBLE, &cols) == MPI_SUCCESS);
  CHECK(type_of(cols)->contiguous());
  CHECK(MPI_Type_free(&v) == MPI_SUCCESS);
  CHECK(MPI_Type_free(&cols) == MPI_SUCCESS);
}

TEST_CASE("mpi datatypes: pack and unpack against a reference, negative "
          "strides and nested types included") {
  Running mpi;
  std::vector<int> data(100);
  std::iota(data.begin(), data.end(), 0);
  MPI_Datatype back = MPI_DATATYPE_NULL, nested = MPI_DATATYPE_NULL;
  // Ints 50, 47, 44, 41 (a stride of -3 from data[50]).
  REQUIRE(MPI_Type_vector(4, 1, -3, MPI_INT, &back) == MPI_SUCCESS);
  TypeRef b = type_of(back);
  CHECK(b->lb == -36);
  std::vector<int> packed(4);
  pack(&data[50], 1, *b, reinterpret_cast<uint8_t *>(packed.data()));
  CHECK(packed == std::vector<int>{50, 47, 44, 41});
  // Two of `back`, 40 bytes (10 ints) apart.
  REQUIRE(MPI_Type_create_hvector(2, 1, 40, back, &nested) == MPI_SUCCESS);
  TypeRef n = type_of(nested);
  CHECK(n->size == 32);
  std::vector<int> two(8);
  pack(&data[50], 1, *n, reinterpret_cast<uint8_t *>(two.data()));
  CHECK(two == std::vector<int>{50, 47, 44, 41, 60, 57, 54, 51});
  // Unpacking a short stream fills the first elements only.
  std::vector<int> out(100, -1);
  std::vector<int> in{1, 2, 3, 4, 5, 6};
  unpack(reinterpret_cast<const uint8_t *>(in.data()), 5 * sizeof(int),
         &out[50], 1, *n);
  CHECK(out[50] == 1);
  CHECK(out[41] == 4);
  CHECK(out[60] == 5);
  CHECK(out[57] == -1);
  CHECK(MPI_Type_free(&back) == MPI_SUCCESS);
  // The nested type does not depend on the one it was made from.
  CHECK(type_of(nested)->size == 32);
  CHECK(MPI_Type_free(&nested) == MPI_SUCCESS);
}

TEST_CASE("mpi datatypes: errors return their codes under MPI_ERRORS_"
          "RETURN without a card") {
  Running mpi;
  MPI_Datatype t = MPI_DATATYPE_NULL, builtin = MPI_INT;
  // No communicator exists here: MPI_COMM_WORLD's handler is the default,
  // fatal one, so only calls that succeed, or whose errors are checked
  // through the internal API, are made.
  CHECK(MPI_Type_contiguous(0, MPI_BYTE, &t) == MPI_SUCCESS);
  CHECK(type_of(t)->size == 0);
  CHECK_THROWS_AS(committed_type(t), Failure);
  CHECK(MPI_Type_commit(&t) == MPI_SUCCESS);
  CHECK(committed_type(t)->size == 0);
  CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
  CHECK(t == MPI_DATATYPE_NULL);
  CHECK_THROWS_AS(type_of(t), Failure);
  CHECK_THROWS_AS(type_of(MPI_COMM_WORLD), Failure);
  CHECK(type_of(builtin)->builtin);
}

TEST_CASE("mpi operations: what applies to which type, and the results") {
  CHECK_NOTHROW(check_op(MPI_SUM, Basic::Double));
  CHECK_NOTHROW(check_op(MPI_BXOR, Basic::Byte));
  CHECK_NOTHROW(check_op(MPI_LAND, Basic::Bool));
  CHECK_THROWS_AS(check_op(MPI_BAND, Basic::Float), Failure);
  CHECK_THROWS_AS(check_op(MPI_SUM, Basic::Byte), Failure);
  CHECK_THROWS_AS(check_op(MPI_LOR, Basic::Double), Failure);
  CHECK_THROWS_AS(check_op(MPI_REPLACE, Basic::Int), Failure);
  CHECK_THROWS_AS(check_op(MPI_INT, Basic::Int), Failure);
  int a[4] = {1, -2, 3, 0}, b[4] = {4, 5, -6, 0};
  apply_op(MPI_MAX, Basic::Int, a, b, 4);
  CHECK(a[0] == 4);
  CHECK(a[1] == 5);
  CHECK(a[2] == 3);
  apply_op(MPI_LXOR, Basic::Int, a, b, 4);
  CHECK(a[0] == 0);
  CHECK(a[3] == 0);
  unsigned char x[2] = {0xF0, 0x0F}, y[2] = {0xFF, 0xFF};
  apply_op(MPI_BAND, Basic::Byte, x, y, 2);
  CHECK(x[0] == 0xF0);
  long double p[1] = {1.5L}, q[1] = {4};
  apply_op(MPI_PROD, Basic::LongDouble, p, q, 1);
  CHECK(p[0] == 6.0L);
}
