# Run by ctest when it reads the test list (what gtest_discover_tests' PRE_TEST mode does),
# with MKA_TEST_EXE, MKA_TEST_TARGET, MKA_TEST_WORKDIR and MKA_TEST_PROPERTIES set by the file
# mka_discover_tests() generates. It lists the binary's tests and adds one ctest test per test
# ("Suite.Name", "Prefix/Suite.Name/param"), except the cases of an MKA_TABLE_TEST: one ctest
# test per table ("Prefix/Table"), each case still a gtest test of its own (--gtest_filter picks
# one). A table runs its cases in one process, as its loop did: a process per case costs more
# start-up (an ASan runtime, the binary's tables) than most of the cases themselves.
if(NOT EXISTS "${MKA_TEST_EXE}")
  add_test("${MKA_TEST_TARGET}_NOT_BUILT" "${MKA_TEST_TARGET}_NOT_BUILT")
  return()
endif()
execute_process(COMMAND "${MKA_TEST_EXE}" --gtest_list_tests
                WORKING_DIRECTORY "${MKA_TEST_WORKDIR}"
                OUTPUT_VARIABLE listing ERROR_VARIABLE listing_error RESULT_VARIABLE result TIMEOUT 120)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${MKA_TEST_EXE} --gtest_list_tests failed (${result}):\n${listing}${listing_error}")
endif()
# A parameter's printed value may hold anything, ';' included: comments go before the split.
string(REGEX REPLACE "  #[^\n]*" "" listing "${listing}")
string(REPLACE ";" "" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suite "")
set(tables "")
foreach(line IN LISTS lines)
  if(line MATCHES "^  ([^ ]+)$")
    set(name "${CMAKE_MATCH_1}")
    if(name MATCHES "^Case/")  # MKA_TABLE_TEST's cases (test/support/table_test.h)
      list(FIND tables "${suite}" seen)  # not IN_LIST: ctest reads this under old policies
      if(seen EQUAL -1)
        list(APPEND tables "${suite}")
        add_test("${suite}" "${MKA_TEST_EXE}" "--gtest_filter=${suite}.*")
        set_tests_properties("${suite}" PROPERTIES WORKING_DIRECTORY "${MKA_TEST_WORKDIR}" ${MKA_TEST_PROPERTIES})
      endif()
    else()
      add_test("${suite}.${name}" "${MKA_TEST_EXE}" "--gtest_filter=${suite}.${name}")
      set_tests_properties("${suite}.${name}" PROPERTIES WORKING_DIRECTORY "${MKA_TEST_WORKDIR}"
                           SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]" ${MKA_TEST_PROPERTIES})
    endif()
  elseif(line MATCHES "^([^ ]+)\\.$")
    set(suite "${CMAKE_MATCH_1}")
  endif()
endforeach()
