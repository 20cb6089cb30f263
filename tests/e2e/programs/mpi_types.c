/* Datatypes on nicemu's MPI, on 2 ranks (test_mpi.cpp): sizes and
 * extents of contiguous, vector and hvector types (nested, negative
 * strides), a matrix column and a whole transposed matrix sent as one
 * datatype and compared with a reference pack made here, eager and
 * rendezvous, receives into strided buffers, MPI_Get_count, collectives
 * with derived types, and the errors of uncommitted and freed types. */
#include "mpi_test.h"

#define ROWS 100
#define COLS 100

static float matrix[ROWS][COLS];

static float element(int r, int c) {
  return (float)(r * 1000 + c);
}

static void sizes_and_extents(void) {
  MPI_Datatype c3, v, hv, nested, negative;
  MPI_Aint lb = -1, extent = -1;
  int size = -1;
  OK(MPI_Type_contiguous(3, MPI_INT, &c3));
  OK(MPI_Type_size(c3, &size));
  OK(MPI_Type_get_extent(c3, &lb, &extent));
  EXPECT(size == 12 && lb == 0 && extent == 12, "contiguous: %d %ld %ld", size,
         (long)lb, (long)extent);
  /* 4 blocks of 2 doubles, 5 doubles apart: 8 doubles, 17 doubles wide. */
  OK(MPI_Type_vector(4, 2, 5, MPI_DOUBLE, &v));
  OK(MPI_Type_size(v, &size));
  OK(MPI_Type_get_extent(v, &lb, &extent));
  EXPECT(size == 64 && lb == 0 && extent == 17 * 8, "vector: %d %ld %ld", size,
         (long)lb, (long)extent);
  /* The same with the stride in bytes. */
  OK(MPI_Type_create_hvector(4, 2, 40, MPI_DOUBLE, &hv));
  OK(MPI_Type_get_extent(hv, &lb, &extent));
  EXPECT(extent == 17 * 8, "hvector extent %ld", (long)extent);
  /* 3 of the vector, 1000 bytes apart. */
  OK(MPI_Type_create_hvector(3, 1, 1000, v, &nested));
  OK(MPI_Type_size(nested, &size));
  OK(MPI_Type_get_extent(nested, &lb, &extent));
  EXPECT(size == 192 && extent == 2000 + 17 * 8, "nested: %d %ld", size,
         (long)extent);
  /* Going backwards: 3 ints, each 2 ints before the last. */
  OK(MPI_Type_vector(3, 1, -2, MPI_INT, &negative));
  OK(MPI_Type_get_extent(negative, &lb, &extent));
  EXPECT(lb == -16 && extent == 20, "negative stride: lb %ld extent %ld",
         (long)lb, (long)extent);
  OK(MPI_Type_free(&c3));
  OK(MPI_Type_free(&v));
  OK(MPI_Type_free(&hv));
  OK(MPI_Type_free(&nested));
  OK(MPI_Type_free(&negative));
  EXPECT(v == MPI_DATATYPE_NULL, "freed type");
  OK(MPI_Type_size(MPI_DOUBLE, &size));
  EXPECT(size == 8, "MPI_DOUBLE %d", size);
  OK(MPI_Type_size(MPI_LONG_DOUBLE, &size));
  EXPECT(size == (int)sizeof(long double), "MPI_LONG_DOUBLE %d", size);
}

/* Column `c` of the first `rows` rows. */
static void column(int rows, MPI_Datatype *t) {
  OK(MPI_Type_vector(rows, 1, COLS, MPI_FLOAT, t));
  OK(MPI_Type_commit(t));
}

/* The matrix's first `n` rows and columns, column by column: a column
 * type, repeated one float apart. */
static void transposed(int n, MPI_Datatype *t) {
  MPI_Datatype col;
  OK(MPI_Type_vector(n, 1, COLS, MPI_FLOAT, &col));
  OK(MPI_Type_create_hvector(n, 1, sizeof(float), col, t));
  OK(MPI_Type_commit(t));
  OK(MPI_Type_free(&col)); /* the new type does not depend on it */
}

static void send_columns_and_transposes(void) {
  int sizes[2] = {10, ROWS}; /* 400 bytes: eager; 40000: rendezvous */
  int k, r, c;
  for (r = 0; r < ROWS; ++r)
    for (c = 0; c < COLS; ++c)
      matrix[r][c] = element(r, c);
  for (k = 0; k < 2; ++k) {
    int n = sizes[k];
    MPI_Datatype col, xpose;
    static float got[ROWS * COLS];
    column(n, &col);
    transposed(n, &xpose);
    if (me == 0) {
      OK(MPI_Send(&matrix[0][7], 1, col, 1, 1, MPI_COMM_WORLD));
      OK(MPI_Send(matrix, 1, xpose, 1, 2, MPI_COMM_WORLD));
    } else if (me == 1) {
      MPI_Status st;
      int count = -1;
      memset(got, 0, sizeof got);
      OK(MPI_Recv(got, n, MPI_FLOAT, 0, 1, MPI_COMM_WORLD, &st));
      OK(MPI_Get_count(&st, MPI_FLOAT, &count));
      EXPECT(count == n, "column: %d floats", count);
      for (r = 0; r < n; ++r)
        EXPECT(got[r] == element(r, 7), "column %d: row %d: %g", n, r,
               (double)got[r]);
      memset(got, 0, sizeof got);
      OK(MPI_Recv(got, n * n, MPI_FLOAT, 0, 2, MPI_COMM_WORLD, &st));
      for (r = 0; r < n; ++r)
        for (c = 0; c < n; ++c)
          if (got[r * n + c] != element(c, r)) {
            EXPECT(0, "transposed %d: [%d][%d] = %g", n, r, c,
                   (double)got[r * n + c]);
            r = c = n;
          }
      OK(MPI_Get_count(&st, xpose, &count));
      EXPECT(count == 1, "one transposed matrix: %d", count);
    }
    OK(MPI_Type_free(&col));
    OK(MPI_Type_free(&xpose));
  }
}

/* Contiguous data received into every third int, and a partial receive
 * (MPI_Get_count says MPI_UNDEFINED). */
static void receive_into_strided(void) {
  int sizes[2] = {100, 3000}; /* eager, rendezvous */
  int k, i;
  for (k = 0; k < 2; ++k) {
    int n = sizes[k];
    static int data[3000], spread[9000];
    MPI_Datatype every3;
    OK(MPI_Type_vector(n, 1, 3, MPI_INT, &every3));
    OK(MPI_Type_commit(&every3));
    if (me == 0) {
      for (i = 0; i < n; ++i)
        data[i] = i * 11 + k;
      OK(MPI_Send(data, n, MPI_INT, 1, 3, MPI_COMM_WORLD));
      OK(MPI_Send(data, n - 1, MPI_INT, 1, 4, MPI_COMM_WORLD));
    } else if (me == 1) {
      MPI_Status st;
      int count = -2;
      for (i = 0; i < 3 * n; ++i)
        spread[i] = -1;
      OK(MPI_Recv(spread, 1, every3, 0, 3, MPI_COMM_WORLD, &st));
      for (i = 0; i < 3 * n; ++i)
        if (spread[i] != (i % 3 ? -1 : i / 3 * 11 + k)) {
          EXPECT(0, "strided %d: element %d = %d", n, i, spread[i]);
          break;
        }
      OK(MPI_Recv(spread, 1, every3, 0, 4, MPI_COMM_WORLD, &st));
      OK(MPI_Get_count(&st, every3, &count));
      EXPECT(count == MPI_UNDEFINED, "a partial element: count %d", count);
      OK(MPI_Get_count(&st, MPI_INT, &count));
      EXPECT(count == n - 1, "ints: %d", count);
    }
    OK(MPI_Type_free(&every3));
  }
}

static void collectives_with_types(void) {
  MPI_Datatype pair, strided;
  int v[8], sum[8], i;
  double grid[4][6];
  OK(MPI_Type_contiguous(2, MPI_INT, &pair));
  OK(MPI_Type_commit(&pair));
  for (i = 0; i < 8; ++i)
    v[i] = me * 100 + i;
  OK(MPI_Allreduce(v, sum, 4, pair, MPI_SUM, MPI_COMM_WORLD));
  for (i = 0; i < 8; ++i)
    EXPECT(sum[i] == 100 * nranks * (nranks - 1) / 2 + nranks * i, "sum %d: %d",
           i, sum[i]);
  /* Broadcast the third column of a 4 x 6 grid. */
  OK(MPI_Type_vector(4, 1, 6, MPI_DOUBLE, &strided));
  OK(MPI_Type_commit(&strided));
  for (i = 0; i < 24; ++i)
    grid[i / 6][i % 6] = me == 0 ? i : -1;
  OK(MPI_Bcast(&grid[0][2], 1, strided, 0, MPI_COMM_WORLD));
  for (i = 0; i < 24; ++i)
    EXPECT(grid[i / 6][i % 6] == (me == 0 || i % 6 == 2 ? i : -1),
           "grid %d: %g", i, grid[i / 6][i % 6]);
  OK(MPI_Type_free(&pair));
  OK(MPI_Type_free(&strided));
}

static void type_errors(void) {
  MPI_Datatype t, builtin = MPI_INT;
  int x = 0;
  OK(MPI_Type_contiguous(2, MPI_INT, &t));
  FAILS(MPI_ERR_TYPE, MPI_Send(&x, 1, t, 0, 0, MPI_COMM_SELF));
  OK(MPI_Type_free(&t));
  FAILS(MPI_ERR_TYPE, MPI_Send(&x, 1, t, 0, 0, MPI_COMM_SELF));
  FAILS(MPI_ERR_TYPE,
        MPI_Send(&x, 1, (MPI_Datatype)12345, 0, 0, MPI_COMM_SELF));
  FAILS(MPI_ERR_TYPE, MPI_Type_free(&builtin));
  OK(MPI_Type_commit(&builtin));
  FAILS(MPI_ERR_COUNT, MPI_Type_contiguous(-1, MPI_INT, &t));
  FAILS(MPI_ERR_TYPE, MPI_Type_vector(2, 1, 2, MPI_DATATYPE_NULL, &t));
  FAILS(MPI_ERR_ARG, MPI_Type_vector(2, -1, 2, MPI_INT, &t));
}

int main(int argc, char **argv) {
  test_init(&argc, &argv);
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
  sizes_and_extents();
  send_columns_and_transposes();
  receive_into_strided();
  collectives_with_types();
  type_errors();
  return test_finish();
}
