# One CTest test per GoogleTest suite of a test program, rather than one per test
# (gtest_discover_tests): each CTest test is a process, and starting streamdet_tests costs about
# 0.16 CPU-s (263 shared libraries, most of it in the dynamic loader), which for the 544 ONNX node
# tests alone was longer than the tests (docs/benchmarks.md, "Test command time"). A suite runs its
# tests in one process, each still named in the output, a failing one with its message
# (`--output-on-failure`); a suite whose every test skipped (the GPU tests here) is reported as
# skipped. One test by name: `build/tests/streamdet_tests --gtest_filter=Suite.Test`.
#
# The suites are listed when CTest starts (as gtest_discover_tests' PRE_TEST mode does), from the
# program as built: a new suite needs no CMake change.
#   streamdet_add_gtest_suites(TARGET [TIMEOUT seconds])
function(streamdet_add_gtest_suites target)
  cmake_parse_arguments(ARG "" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  # Written at generate time, with the program's path resolved; run by CTest.
  file(GENERATE OUTPUT "${script}" CONTENT "
set(program \"$<TARGET_FILE:${target}>\")
execute_process(COMMAND \"\${program}\" --gtest_list_tests
                WORKING_DIRECTORY \"${CMAKE_CURRENT_BINARY_DIR}\"
                OUTPUT_VARIABLE listing RESULT_VARIABLE listed TIMEOUT 60)
if(NOT listed EQUAL 0)
  # Not built, or it fails before listing: one test that fails and says so.
  add_test(${target}.NotListed \"\${program}\" --gtest_list_tests)
  return()
endif()
# A suite's line starts in the first column and ends with its name and a dot (a typed or
# parameterized suite adds a comment after it); its tests follow, indented.
string(REGEX MATCHALL \"(^|\n)[^ \n#][^ \n]*\\\\.\" suites \"\${listing}\")
foreach(suite IN LISTS suites)
  string(REGEX REPLACE \"^\n|\\\\.$\" \"\" suite \"\${suite}\")
  add_test(\"\${suite}\" \"\${program}\" \"--gtest_filter=\${suite}.*\" --exit-77-when-all-skipped)
  set_tests_properties(\"\${suite}\" PROPERTIES TIMEOUT ${ARG_TIMEOUT} SKIP_RETURN_CODE 77
                       WORKING_DIRECTORY \"${CMAKE_CURRENT_BINARY_DIR}\")
endforeach()
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
