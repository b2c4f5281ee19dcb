# ONNX import (models/src/onnx): optional. It needs protobuf-c (the library and protoc-c) and the
# onnx.proto that Debian's libonnx-dev ships; the C code for onnx.proto is generated here at build
# time, into the build tree, never committed. HETCL_WITH_ONNX: AUTO (default) builds it when all
# three are found, ON requires them, OFF leaves it out (hetcl_onnx_load then returns
# HETCL_ERR_UNSUPPORTED saying so). Everything else builds and tests the same without it.
set(HETCL_WITH_ONNX AUTO CACHE STRING "ONNX import: AUTO, ON or OFF (needs protobuf-c and onnx.proto)")
set_property(CACHE HETCL_WITH_ONNX PROPERTY STRINGS AUTO ON OFF)

set(HETCL_ONNX_ENABLED OFF)
if(NOT HETCL_WITH_ONNX STREQUAL "OFF")
  find_program(PROTOC_C_EXECUTABLE protoc-c)
  find_path(PROTOBUF_C_INCLUDE_DIR protobuf-c/protobuf-c.h)
  find_library(PROTOBUF_C_LIBRARY protobuf-c)
  find_file(HETCL_ONNX_PROTO onnx.proto PATH_SUFFIXES onnx)
  if(PROTOC_C_EXECUTABLE AND PROTOBUF_C_INCLUDE_DIR AND PROTOBUF_C_LIBRARY AND HETCL_ONNX_PROTO)
    set(HETCL_ONNX_ENABLED ON)
  elseif(HETCL_WITH_ONNX STREQUAL "ON")
    message(FATAL_ERROR "hetcl: HETCL_WITH_ONNX=ON but protoc-c, libprotobuf-c or onnx.proto was "
                        "not found. On Debian 12: sudo apt-get install protobuf-c-compiler "
                        "libprotobuf-c-dev libonnx-dev (or run tools/install-deps.sh)")
  endif()
endif()
message(STATUS "hetcl: ONNX import ${HETCL_ONNX_ENABLED}")

# hetcl_onnx_generate(<target>): adds onnx.pb-c.c to target, generated from HETCL_ONNX_PROTO.
function(hetcl_onnx_generate target)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/onnxgen)
  get_filename_component(dir ${HETCL_ONNX_PROTO} DIRECTORY)
  file(MAKE_DIRECTORY ${gen})
  add_custom_command(OUTPUT ${gen}/onnx.pb-c.c ${gen}/onnx.pb-c.h
    COMMAND ${PROTOC_C_EXECUTABLE} --c_out=${gen} --proto_path=${dir} ${HETCL_ONNX_PROTO}
    DEPENDS ${HETCL_ONNX_PROTO} COMMENT "Generating onnx.pb-c.c from ${HETCL_ONNX_PROTO}" VERBATIM)
  # Generated code: not held to hetcl's warnings.
  set_source_files_properties(${gen}/onnx.pb-c.c PROPERTIES GENERATED ON COMPILE_OPTIONS "-w")
  target_sources(${target} PRIVATE ${gen}/onnx.pb-c.c)
  target_include_directories(${target} PRIVATE ${gen} ${PROTOBUF_C_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE HETCL_WITH_ONNX=1)
  target_link_libraries(${target} PRIVATE ${PROTOBUF_C_LIBRARY})
endfunction()
