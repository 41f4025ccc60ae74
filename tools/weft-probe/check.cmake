# Runs PROBE with ARGS (a space-separated string) and checks, failing with a
# message otherwise:
#   EXPECT_RC      the exit status
#   EXPECT         a regular expression the output (stdout + stderr) matches
#   REPORT         a report file that must exist and contain a "## <name>: "
#                  heading for every name in SECTIONS (comma-separated)
#   REPORT_EXPECT  a regular expression the report matches
separate_arguments(_args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${PROBE}" ${_args}
	RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
set(_all "${_out}${_err}")
if(NOT "${_rc}" STREQUAL "${EXPECT_RC}")
	message(FATAL_ERROR "exit status ${_rc}, expected ${EXPECT_RC}; output:\n${_all}")
endif()
if(DEFINED EXPECT AND NOT _all MATCHES "${EXPECT}")
	message(FATAL_ERROR "output does not match '${EXPECT}':\n${_all}")
endif()
if(DEFINED REPORT)
	if(NOT EXISTS "${REPORT}")
		message(FATAL_ERROR "no report at ${REPORT}")
	endif()
	file(READ "${REPORT}" _report)
	string(REPLACE "," ";" _sections "${SECTIONS}")
	foreach(_s IN LISTS _sections)
		if(NOT _report MATCHES "\n## ${_s}: [^\n]+\n\n[^\n]+\n\n\\| what \\| median")
			message(FATAL_ERROR "the report lacks section '${_s}' with its table:\n${_report}")
		endif()
	endforeach()
	if(NOT _report MATCHES "^# weft-probe report\n.*## Summary\n")
		message(FATAL_ERROR "the report lacks its title or summary:\n${_report}")
	endif()
	if(DEFINED REPORT_EXPECT AND NOT _report MATCHES "${REPORT_EXPECT}")
		message(FATAL_ERROR "the report does not match '${REPORT_EXPECT}':\n${_report}")
	endif()
endif()
message(STATUS "ok: ${ARGS}")
