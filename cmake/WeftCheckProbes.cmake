# ctest obs.usdt_probes, run as `cmake -P`: the shared library carries a
# stapsdt note for every probe docs/observability.md lists.
#   -DREADELF=<readelf> -DLIBRARY=<libweft.so>
execute_process(COMMAND "${READELF}" -n "${LIBRARY}" OUTPUT_VARIABLE _notes RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
	message(FATAL_ERROR "${READELF} -n ${LIBRARY} failed")
endif()
set(_missing "")
foreach(_probe task__post task__start task__end task__steal fiber__switch fiber__park
		fiber__wake fiber__preempt)
	if(NOT _notes MATCHES "Provider: weft[^\n]*\n[^\n]*Name: ${_probe}\n")
		list(APPEND _missing ${_probe})
	endif()
endforeach()
if(_missing)
	message(FATAL_ERROR "${LIBRARY} lacks the USDT probes: ${_missing}")
endif()
message(STATUS "usdt: all 8 weft probes present")
