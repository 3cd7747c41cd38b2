# Run by ctest when it reads the test list (what gtest_discover_tests' PRE_TEST mode does),
# with MKA_TEST_EXE, MKA_TEST_TARGET, MKA_TEST_WORKDIR, MKA_TEST_PER and MKA_TEST_PROPERTIES set
# by the file mka_discover_tests() generates. It lists the binary's tests and adds one ctest test
# per test suite ("Suite", "Prefix/Suite", an MKA_TABLE_TEST's "Prefix/Table") when MKA_TEST_PER
# is "suite", else one per test ("Suite.Name", "Prefix/Suite.Name/param"; a table still one per
# table). Each gtest test can still be run alone by name (--gtest_filter). A suite runs its tests
# in one process, as a table its cases: a process per test costs more start-up and exit (the
# sanitizer's runtime and leak check, the binary's tables) than most unit tests themselves, which
# made a third of the suite's CPU; the end-to-end binaries' tests take seconds each, and run one
# per process so that ctest spreads them over the CPUs.
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
    # A table's cases are "Case/<name>" (test/support/table_test.h). A suite's skipped tests show
    # in its output; the suite passes when the others do.
    if(name MATCHES "^Case/" OR MKA_TEST_PER MATCHES "^suite$")
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
