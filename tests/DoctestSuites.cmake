# Registers every doctest test case of a test executable as a CTest test labelled with its
# TEST_SUITE. Run after each build of the executable (see tests/CMakeLists.txt):
#   cmake -D EXE=<test binary> -D OUT=<tests file> -D WORKDIR=<dir> -D SUITES=a,b
#         [-D ENV=VAR=value,VAR2=value2] [-D SERIAL=ON] -P this-file
# SERIAL=ON: each test runs alone (RUN_SERIAL), for tests that occupy every core themselves.
# doctest_discover_tests(ADD_LABELS 1) asks doctest for each test's suite with the name as an
# unescaped --test-case filter, where a comma separates filters: tests with a comma in the name
# got no label and were left out of `ctest -L unit`. Here each suite is listed with
# --test-suite=<suite>, and every name is escaped for doctest's filter; a ';' in a name no longer
# splits it into two tests that match nothing and pass. A test case outside every listed suite is
# an error. Suite "threaded" holds unit tests that run several threads or chains at once: they are
# labelled both unit and threaded (the TSan build runs -L threaded).
string(REPLACE "," ";" suites "${SUITES}")
set(env_property "")
if(ENV)
  string(REPLACE "," ";" env "${ENV}")
  set(env_property " ENVIRONMENT [==[${env}]==]")
endif()
if(SERIAL)
  string(APPEND env_property " RUN_SERIAL ON")
endif()
execute_process(COMMAND "${EXE}" --count OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "test cases passing the current filters: ([0-9]+)")
  message(FATAL_ERROR "${EXE} --count failed (${rc}): ${out}")
endif()
set(total ${CMAKE_MATCH_1})
set(count 0)
set(script "")
foreach(suite IN LISTS suites)
  set(labels ${suite})
  if(suite STREQUAL "threaded")
    set(labels "unit;threaded")
  endif()
  execute_process(COMMAND "${EXE}" --test-suite=${suite} --list-test-cases
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${EXE} --list-test-cases failed (${rc}): ${out}")
  endif()
  # A ';' in a name would split it in a CMake list: it travels as \x01 while the lines are split.
  string(ASCII 1 semicolon)
  string(REPLACE ";" "${semicolon}" out "${out}")
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(line STREQUAL "" OR line MATCHES "^\\[doctest\\] " OR line MATCHES "^=+$")
      continue()
    endif()
    string(REPLACE "${semicolon}" ";" name "${line}")
    math(EXPR count "${count} + 1")
    # doctest filters: ',' separates filters, '\' escapes.
    string(REPLACE "\\" "\\\\" filter "${name}")
    string(REPLACE "," "\\," filter "${filter}")
    string(APPEND script
           "add_test([==[${name}]==] \"${EXE}\" [==[--test-case=${filter}]==] "
           "[==[--test-suite=${suite}]==])\n"
           "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY \"${WORKDIR}\" "
           "LABELS [==[${labels}]==]${env_property})\n")
  endforeach()
endforeach()
if(NOT count EQUAL total)
  message(FATAL_ERROR "${EXE}: ${total} test cases, but ${count} in the suites ${SUITES}: "
                      "put every TEST_CASE in one of them")
endif()
file(WRITE "${OUT}" "${script}")
