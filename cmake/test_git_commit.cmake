# cmake -DSRC=<hetcl checkout> -DWORK=<scratch dir> -P test_git_commit.cmake
# Tests cmake/git_commit.cmake in each of its cases against the checkout's HEAD:
#   override      -DOVERRIDE wins over everything;
#   archive       a `git archive HEAD` of cmake/archive_commit.txt (export-subst) names HEAD;
#   dubious       git refuses the checkout as owned by another user (simulated with git's
#                 GIT_TEST_ASSUME_DIFFERENT_OWNER): still HEAD;
#   no git        git missing: HEAD read from .git by hand;
#   plain         neither a checkout nor an archive: "unknown".
# Prints "SKIPPED: ..." (the test's skip pattern) where SRC is not a git checkout.
cmake_minimum_required(VERSION 3.25)
set(script "${CMAKE_CURRENT_LIST_DIR}/git_commit.cmake")
if(NOT EXISTS "${SRC}/.git")
  message("SKIPPED: ${SRC} is not a git checkout")
  return()
endif()
find_program(GIT git)
if(NOT GIT)
  message("SKIPPED: no git program")
  return()
endif()
execute_process(COMMAND "${GIT}" -c safe.directory=* -C "${SRC}" rev-parse HEAD
                OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
string(SUBSTRING "${head}" 0 12 head)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

# expect(<case> <regex> <src> [cmake -D... and env VAR=value args]): runs the script, checks
# the commit it wrote.
function(expect name regex src)
  set(env "")
  set(defs "")
  foreach(a IN LISTS ARGN)
    if(a MATCHES "^-D")
      list(APPEND defs "${a}")
    else()
      list(APPEND env "${a}")
    endif()
  endforeach()
  set(out "${WORK}/${name}.h")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} -- ${CMAKE_COMMAND} -DSRC=${src}
                          -DOUT=${out} ${defs} -P ${script}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: git_commit.cmake failed:\n${err}")
  endif()
  file(STRINGS "${out}" line REGEX "#define HETCL_GIT_COMMIT")
  if(NOT line MATCHES "\"${regex}\"$")
    message(FATAL_ERROR "${name}: expected commit ${regex}, got: ${line}")
  endif()
  message(STATUS "${name}: ${line}")
endfunction()

expect(override "0123abc" "${SRC}" -DOVERRIDE=0123abc)

execute_process(COMMAND "${GIT}" -c safe.directory=* -C "${SRC}" archive --format=tar
                        -o "${WORK}/archive.tar" HEAD cmake/archive_commit.txt
                COMMAND_ERROR_IS_FATAL ANY)
file(MAKE_DIRECTORY "${WORK}/archive")
execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf "${WORK}/archive.tar"
                WORKING_DIRECTORY "${WORK}/archive" COMMAND_ERROR_IS_FATAL ANY)
expect(archive "${head}" "${WORK}/archive")

execute_process(COMMAND ${CMAKE_COMMAND} -E env GIT_TEST_ASSUME_DIFFERENT_OWNER=1 -- "${GIT}"
                        -C "${SRC}" rev-parse HEAD
                RESULT_VARIABLE refused OUTPUT_QUIET ERROR_QUIET)
if(refused EQUAL 0)
  message(STATUS "dubious: this git ignores GIT_TEST_ASSUME_DIFFERENT_OWNER; case not exercised")
else()
  expect(dubious "${head}(-dirty)?" "${SRC}" GIT_TEST_ASSUME_DIFFERENT_OWNER=1)
endif()

expect(no_git "${head}" "${SRC}" -DGIT=${WORK}/no-such-git)

file(MAKE_DIRECTORY "${WORK}/plain/cmake")
file(COPY "${SRC}/cmake/archive_commit.txt" DESTINATION "${WORK}/plain/cmake")
expect(plain "unknown" "${WORK}/plain")
