// nicemu's mpi.h from C++ (test_mpi.cpp): the C program, as C++.
#include "mpi_header.c"
