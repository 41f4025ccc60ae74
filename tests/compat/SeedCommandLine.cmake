# ctest compat.seed_cmdline, run as `cmake -P`: builds the seed-style
# program the way docs/seeds/compat.md tells a user to build the seed's programs,
#
#   cc -I<weft>/include/weft/compat <sources> -L<libdir> -lweft -lpthread
#
# (no other -I, no -D, no -std), links it against the build tree's
# libweft.so, runs it and checks its verdict.
#
# Inputs (-D): CC, EXTRA_FLAGS (the sanitizer flags of this build; may be
# empty), COMPAT_DIR, LIBDIR, SOURCES (;-list), OUT, ARGS (;-list).
cmake_minimum_required(VERSION 3.25)

foreach(_v CC COMPAT_DIR LIBDIR SOURCES OUT)
	if(NOT DEFINED ${_v} OR "${${_v}}" STREQUAL "")
		message(FATAL_ERROR "SeedCommandLine.cmake: -D${_v}=... is required")
	endif()
endforeach()

set(_cmd "${CC}" ${EXTRA_FLAGS} "-I${COMPAT_DIR}" ${SOURCES} -o "${OUT}"
	"-L${LIBDIR}" -lweft -lpthread "-Wl,-rpath,${LIBDIR}")
list(JOIN _cmd " " _shown)
message(STATUS "compile: ${_shown}")
execute_process(COMMAND ${_cmd} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
	message(FATAL_ERROR "the seed-style program did not compile (${_rc}):\n${_out}${_err}")
endif()
if(_err)
	# Warnings are allowed (the seed's style draws -Wmain and the like
	# under some compilers' defaults), but shown.
	message(STATUS "compiler said:\n${_err}")
endif()

execute_process(COMMAND "${OUT}" ${ARGS} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
	ERROR_VARIABLE _err)
message(STATUS "run: ${OUT} ${ARGS} -> ${_rc}\n${_out}${_err}")
if(NOT _rc EQUAL 0 OR NOT _out MATCHES "seed-style: PASS")
	message(FATAL_ERROR "the seed-style program failed")
endif()
