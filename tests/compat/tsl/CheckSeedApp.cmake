# Runs the seed's sample program (seed_app.c) with N threads and checks its
# output:
#
#   cmake -DAPP=<program> -DN=<threads> -DOUT=<file> [-DORDER=ON] -P CheckSeedApp.cmake
#
#  - it exits with status 0 (tsl_exit in main ends the process when nothing
#    is left to run) and says nothing on stderr;
#  - every thread 2 .. N was created, started, printed counts 0 .. 999 and
#    was joined after its last count; nothing else was printed;
#  - main's last words are "main thread calling tlib_exit";
#  - with ORDER (FCFS): threads start in tid order and thread 2 counts
#    0 .. 999 in order.
foreach(_v APP N OUT)
	if(NOT DEFINED ${_v})
		message(FATAL_ERROR "CheckSeedApp: -D${_v}= is required")
	endif()
endforeach()

# With -DCC=<compiler> -DSOURCE=<seed_app.c> -DCOMPAT_DIR=<dir> -DLIBDIR=<dir>
# [-DEXTRA_FLAGS=<sanitizer flags>], APP is first built the way
# docs/seeds/compat-tsl.md tells a user to build a seed program, against the build
# tree's libweft.so:
#
#   cc -I<weft>/include/weft/compat app.c -L<libdir> -lweft -lpthread
if(DEFINED CC)
	set(_cmd "${CC}" ${EXTRA_FLAGS} "-I${COMPAT_DIR}" "${SOURCE}" -o "${APP}"
		"-L${LIBDIR}" -lweft -lpthread "-Wl,-rpath,${LIBDIR}")
	list(JOIN _cmd " " _shown)
	message(STATUS "compile: ${_shown}")
	execute_process(COMMAND ${_cmd} RESULT_VARIABLE _rc ERROR_VARIABLE _err)
	if(NOT _rc EQUAL 0)
		message(FATAL_ERROR "FAIL: the seed program did not compile (${_rc}):\n${_err}")
	endif()
endif()
execute_process(COMMAND "${APP}" "${N}"
	OUTPUT_FILE "${OUT}" ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
	message(FATAL_ERROR "FAIL: ${APP} ${N} exited with ${rc}; stderr:\n${err}")
endif()
if(NOT err STREQUAL "")
	message(FATAL_ERROR "FAIL: stderr is not empty:\n${err}")
endif()

math(EXPR threads "${N} - 1")
math(EXPR counts "${threads} * 1000")
math(EXPR others "${threads} * 4 + 1")

# Every line is a count, or one of the others (few): count both kinds.
file(STRINGS "${OUT}" running REGEX "^thread [0-9]+ is running \\(count=[0-9]+\\)$")
list(LENGTH running n)
if(NOT n EQUAL counts)
	message(FATAL_ERROR "FAIL: ${n} count lines, expected ${counts}")
endif()
file(STRINGS "${OUT}" rest REGEX "^(thead [0-9]+ created|thread [0-9]+ started running \\(first time\\);  at the start function|main: waiting for thead [0-9]+|main: thead [0-9]+ finished|main thread calling tlib_exit)$")
list(LENGTH rest n)
if(NOT n EQUAL others)
	message(FATAL_ERROR "FAIL: ${n} other lines, expected ${others}")
endif()
list(GET rest -1 last)
if(NOT last STREQUAL "main thread calling tlib_exit")
	message(FATAL_ERROR "FAIL: main's last line is '${last}'")
endif()

# Creation, start and join of every thread, joins in tid order; the last
# count of every thread.
file(STRINGS "${OUT}" lasts REGEX "\\(count=999\\)$")
set(created "")
set(finished "")
set(want_lasts "")
foreach(tid RANGE 2 ${N})
	list(APPEND created "thead ${tid} created")
	list(APPEND finished "main: thead ${tid} finished")
	list(APPEND want_lasts "thread ${tid} is running (count=999)")
endforeach()
list(FILTER rest INCLUDE REGEX "created$")
if(NOT rest STREQUAL created)
	message(FATAL_ERROR "FAIL: creations: ${rest}")
endif()
file(STRINGS "${OUT}" fins REGEX "finished$")
if(NOT fins STREQUAL finished)
	message(FATAL_ERROR "FAIL: joins: ${fins}")
endif()
list(SORT lasts COMPARE NATURAL)
if(NOT lasts STREQUAL want_lasts)
	message(FATAL_ERROR "FAIL: not every thread reached count=999")
endif()
# ... and was joined after that.
file(STRINGS "${OUT}" ends REGEX "\\(count=999\\)$|finished$")
foreach(tid RANGE 2 ${N})
	list(FIND ends "thread ${tid} is running (count=999)" i_last)
	list(FIND ends "main: thead ${tid} finished" i_fin)
	if(i_fin LESS i_last)
		message(FATAL_ERROR "FAIL: main joined thread ${tid} before its last count")
	endif()
endforeach()

if(ORDER)
	file(STRINGS "${OUT}" starts REGEX "started running")
	list(TRANSFORM starts REPLACE " started.*" "")
	set(want "")
	foreach(tid RANGE 2 ${N})
		list(APPEND want "thread ${tid}")
	endforeach()
	if(NOT starts STREQUAL want)
		message(FATAL_ERROR "FAIL: FCFS start order is ${starts}")
	endif()
	file(STRINGS "${OUT}" counts2 REGEX "^thread 2 is running")
	set(want "")
	foreach(i RANGE 0 999)
		list(APPEND want "thread 2 is running (count=${i})")
	endforeach()
	if(NOT counts2 STREQUAL want)
		message(FATAL_ERROR "FAIL: thread 2 did not count 0 .. 999 in order")
	endif()
endif()
message("seed-app: PASS (${N} threads)")
