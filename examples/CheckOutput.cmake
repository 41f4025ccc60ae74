# cmake -DCOMMAND=<program;args...> -DEXPECTED=<file> [-D<VAR>=<value>...]
#       -P CheckOutput.cmake
# Runs COMMAND and fails unless it exits with 0 and its standard output is
# exactly EXPECTED, after @VAR@ in EXPECTED is replaced by the -D value
# (string(CONFIGURE ... @ONLY)). Standard error passes through.
if(NOT DEFINED COMMAND OR NOT DEFINED EXPECTED)
	message(FATAL_ERROR "CheckOutput.cmake: COMMAND and EXPECTED are required")
endif()
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out)
file(READ "${EXPECTED}" _want)
string(CONFIGURE "${_want}" _want @ONLY)
if(NOT _rc EQUAL 0)
	message(FATAL_ERROR "exit status ${_rc}; standard output:\n${_out}")
endif()
if(NOT _out STREQUAL _want)
	message(FATAL_ERROR "standard output differs from ${EXPECTED}\n"
		"--- expected\n${_want}--- got\n${_out}")
endif()
message(STATUS "output matches ${EXPECTED}")
