# ctest install.exports, run as `cmake -P`: the shared library exports only
# the public API. Every defined dynamic symbol must be weft_<name> (not a
# weft__ internal, not a helper that missed `static`); anything else means a
# missing `static` or a hidden-visibility slip.
#
# Inputs (-D): WEFT_LIBRARY (path to libweft.so), WEFT_NM (nm; may be empty).
cmake_minimum_required(VERSION 3.25)

if(NOT WEFT_NM)
	find_program(WEFT_NM nm REQUIRED)
endif()
execute_process(COMMAND "${WEFT_NM}" -D --defined-only "${WEFT_LIBRARY}"
	RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
	message(FATAL_ERROR "${WEFT_NM} -D ${WEFT_LIBRARY} failed: ${_err}")
endif()

string(REPLACE "\n" ";" _lines "${_out}")
set(_bad "")
set(_count 0)
foreach(_line IN LISTS _lines)
	if(NOT _line MATCHES "^[0-9a-fA-F]+ +([A-Za-z]) +([^ ]+)$")
		continue()
	endif()
	set(_name "${CMAKE_MATCH_2}")
	# name@@WEFT_0: the version node of cmake/libweft.map; the node itself
	# is an absolute symbol.
	string(REGEX REPLACE "@.*$" "" _name "${_name}")
	if(_name MATCHES "^(_init|_fini|_edata|_end|__bss_start|WEFT_[0-9]+)$")
		continue()
	endif()
	if(_name MATCHES "^weft_[A-Za-z0-9]" AND NOT _name MATCHES "^weft__")
		math(EXPR _count "${_count} + 1")
	else()
		list(APPEND _bad "${_name}")
	endif()
endforeach()

if(_bad)
	list(JOIN _bad "\n  " _bad)
	message(FATAL_ERROR "${WEFT_LIBRARY} exports symbols outside the public API "
		"(make them static, or they are weft__ internals that leaked):\n  ${_bad}")
endif()
if(_count EQUAL 0)
	message(FATAL_ERROR "${WEFT_LIBRARY} exports no weft_ symbols")
endif()
message(STATUS "install.exports: ${_count} weft_ symbols, nothing else")
