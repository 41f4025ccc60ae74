# run(<what> <command...>), for the scripts the install tests run with
# `cmake -P` (WeftInstallTest.cmake, WeftPackageTest.cmake): runs a
# command, echoes it, fails loudly with its output if it fails, and leaves
# what it printed in run_output.
function(run what)
	list(JOIN ARGN " " _line)
	message(STATUS "${what}: ${_line}")
	execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
		ERROR_VARIABLE _out)
	if(NOT _rc EQUAL 0)
		message(FATAL_ERROR "${what} failed (${_rc}):\n${_line}\n${_out}")
	endif()
	set(run_output "${_out}" PARENT_SCOPE)
endfunction()
