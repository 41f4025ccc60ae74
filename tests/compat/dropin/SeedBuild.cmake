# A ctest test, run as `cmake -P` (lists are joined with |, not ;): builds an unmodified seed program the way
# docs/compat*.md tell a user to, runs it and checks what it printed.
#
#   cmake -DCC=<compiler> [-DEXTRA_FLAGS=<sanitizer flags>]
#         -DWORK=<dir> -DCOPY=<src|dest|src|dest...> -DDIR=<subdir of WORK>
#         -DCOMPILE=<arguments after the compiler> -DRUN=<program;args>
#         [-DENV=<VAR=value|...>] [-DPASS=<regex on stdout>]
#         [-DSTDERR=<regex on stderr>] [-DEXIT=<status, default 0>]
#         [-DINSTALL_FROM=<build dir> -DPKG=<pkg-config arguments>]
#         -P SeedBuild.cmake
#
# WORK is emptied, then every COPY source is copied to WORK/<dest>: the
# program's own tree (say sudoku/sudoku.c and sched/sched.h, or
# benchmarks/vector_multiply.c with or without ../thread-worker.h). In
# WORK/DIR it runs `CC EXTRA_FLAGS COMPILE...`, exactly the documented
# command line but for the sanitizer flags of this build (the libraries
# are built with them), then `cmake -E env ENV... RUN...`.
#
# With INSTALL_FROM, weft's development files (headers, static libraries,
# .pc files) are first installed from that build tree into WORK/prefix
# (cmake --install --prefix --component Development), and the output of
# `pkg-config PKG...` run on that prefix's .pc files is appended to the
# command line: the documented `cc ... $(pkg-config --libs weft-<api>)`.
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

if(DEFINED INSTALL_FROM AND NOT INSTALL_FROM STREQUAL "")
	execute_process(COMMAND "${CMAKE_COMMAND}" --install "${INSTALL_FROM}"
			--prefix "${WORK}/prefix" --component Development
		RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
	if(NOT _rc EQUAL 0)
		message(FATAL_ERROR "FAIL: cmake --install (${_rc}):\n${_out}${_err}")
	endif()
	file(GLOB_RECURSE _pcs "${WORK}/prefix/*/weft.pc")
	list(GET _pcs 0 _pc)
	get_filename_component(_pcdir "${_pc}" DIRECTORY)
	string(REPLACE "|" ";" PKG "${PKG}")
	find_program(_pkg_config pkg-config REQUIRED)
	execute_process(COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${_pcdir}"
			"${_pkg_config}" ${PKG}
		RESULT_VARIABLE _rc OUTPUT_VARIABLE _pkg_out ERROR_VARIABLE _err
		OUTPUT_STRIP_TRAILING_WHITESPACE)
	if(NOT _rc EQUAL 0)
		message(FATAL_ERROR "FAIL: pkg-config ${PKG} (${_rc}): ${_err}")
	endif()
	separate_arguments(_pkg_args UNIX_COMMAND "${_pkg_out}")
	message(STATUS "pkg-config ${PKG} (PKG_CONFIG_PATH=${_pcdir}): ${_pkg_out}")
	list(APPEND COMPILE ${_pkg_args})
endif()

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
