# A ctest test, run as `cmake -P` (lists are joined with |, not ;): builds an unmodified seed program the way
# docs/compat*.md tell a user to, runs it and checks what it printed.
#
#   cmake -DCC=<compiler> [-DEXTRA_FLAGS=<sanitizer flags>]
#         -DWORK=<dir> -DCOPY=<src|dest|src|dest...> -DDIR=<subdir of WORK>
#         -DCOMPILE=<arguments after the compiler> -DRUN=<program;args>
#         [-DENV=<VAR=value|...>] [-DPASS=<regex on stdout>]
#         [-DSTDERR=<regex on stderr>] [-DEXIT=<status, default 0>]
#         -P SeedBuild.cmake
#
# WORK is emptied, then every COPY source is copied to WORK/<dest>: the
# program's own tree (say sudoku/sudoku.c and sched/sched.h, or
# benchmarks/vector_multiply.c with or without ../thread-worker.h). In
# WORK/DIR it runs `CC EXTRA_FLAGS COMPILE...`, exactly the documented
# command line but for the sanitizer flags of this build (the libraries
# are built with them), then `cmake -E env ENV... RUN...`.
cmake_minimum_required(VERSION 3.25)

foreach(_v CC WORK COPY DIR COMPILE RUN)
	if(NOT DEFINED ${_v} OR "${${_v}}" STREQUAL "")
		message(FATAL_ERROR "SeedBuild.cmake: -D${_v}=... is required")
	endif()
endforeach()
if(NOT DEFINED EXIT)
	set(EXIT 0)
endif()
# The lists come joined with | (CMakeLists.txt).
foreach(_l EXTRA_FLAGS COPY COMPILE RUN ENV)
	string(REPLACE "|" ";" ${_l} "${${_l}}")
endforeach()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/${DIR}")
set(_copy ${COPY})
while(_copy)
	list(POP_FRONT _copy _src _dest)
	get_filename_component(_dir "${WORK}/${_dest}" DIRECTORY)
	file(MAKE_DIRECTORY "${_dir}")
	file(COPY_FILE "${_src}" "${WORK}/${_dest}")
endwhile()

set(_cmd "${CC}" ${EXTRA_FLAGS} ${COMPILE})
list(JOIN _cmd " " _shown)
message(STATUS "in ${WORK}/${DIR}: ${_shown}")
execute_process(COMMAND ${_cmd} WORKING_DIRECTORY "${WORK}/${DIR}"
	RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
	message(FATAL_ERROR "FAIL: the seed program did not build (${_rc}):\n${_out}${_err}")
endif()
if(_err)
	message(STATUS "the compiler said (the seeds' style draws warnings):\n${_err}")
endif()

list(JOIN ENV " " _env_shown)
list(JOIN RUN " " _run_shown)
execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${ENV} ${RUN}
	WORKING_DIRECTORY "${WORK}/${DIR}"
	RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
message(STATUS "run: ${_env_shown} ${_run_shown} -> ${_rc}\n--- stdout\n${_out}--- stderr\n${_err}")
if(NOT _rc STREQUAL "${EXIT}")
	message(FATAL_ERROR "FAIL: exit status ${_rc}, expected ${EXIT}")
endif()
if(_err MATCHES "Sanitizer|runtime error")
	message(FATAL_ERROR "FAIL: a sanitizer report")
endif()
if(DEFINED PASS AND NOT _out MATCHES "${PASS}")
	message(FATAL_ERROR "FAIL: stdout does not match '${PASS}'")
endif()
if(DEFINED STDERR AND NOT _err MATCHES "${STDERR}")
	message(FATAL_ERROR "FAIL: stderr does not match '${STDERR}'")
endif()
message(STATUS "PASS")
