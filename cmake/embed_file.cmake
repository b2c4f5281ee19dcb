# cmake -DIN=<x.cl> -DOUT=<x.cl.c> -DNAME=<x> -P embed_file.cmake
# Turns one OpenCL C source into a C byte array, so that kernels ship inside the binary without
# Python at build time and without C11's 4095-character string-literal limit.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
if(body MATCHES "0x[89a-f][0-9a-f]")
  message(FATAL_ERROR "${IN}: non-ASCII byte; OpenCL C sources must be ASCII")
endif()
string(REPEAT "0x[0-9a-f][0-9a-f]," 12 row)
string(REGEX REPLACE "(${row})" "\\1\n    " body "${body}")
file(WRITE "${OUT}" "/* Generated from ${NAME} by embed_file.cmake. Do not edit. */
#include \"hetcl_clsource.h\"
static const char text[] = {\n    ${body}0x00};
const struct hetcl_cl_source hetcl_cl_src_${SYM} = {\"${NAME}\", text, sizeof(text) - 1};
")
