# Test helpers, included from the root CMakeLists.txt. Each case is its own
# ctest entry with its own TIMEOUT, so a hung test fails alone.
#
#   weft_add_cmocka_test(<name>
#       SOURCES <file>...            # test sources; linked with weft_static,
#                                    # cmocka and Threads
#       CASES <case>...              # one ctest entry per case
#       [MATRIX]                     # ... per case x model x worker count
#       [TIMEOUT <seconds>]          # default 60
#       [LIBS <lib>...])             # more libraries to link
#
#   Builds test_<name>. Without MATRIX, adds `<name>.<case>` running
#   `test_<name> <case>`; with MATRIX, adds `<name>.<case>.<model>.w<N>`
#   running `test_<name> <case> <model> <N>` for every run of the matrix
#   (below). The executable sees src/ and tests/ as include directories
#   and, in sanitizer builds, the definition WEFT_TEST_UNDER_SANITIZER=1.
#   A case that calls cmocka's skip() is reported by ctest as skipped.
#
#   weft_add_program_test(<name>
#       COMMAND <program-or-target> [<arg>...]
#       [PASS_REGULAR_EXPRESSION <regex>] [FAIL_REGULAR_EXPRESSION <regex>]
#       [WILL_FAIL]
#       [TIMEOUT <seconds>]          # default 60
#       [ENVIRONMENT <VAR=value>...]
#       [WORKING_DIRECTORY <dir>]
#       [MATRIX])                    # run as <name>.<model>.w<N> with
#                                    # WEFT_MODEL=<model> WEFT_WORKERS=<N>
#
# The matrix: every model in WEFT_TEST_MODELS, each with the worker counts
# in WEFT_TEST_WORKERS_<model> if that is set, else in WEFT_TEST_WORKERS.
# WEFT_TEST_MODELS "all" (the default) is every model the library has, read
# at configure time from the weft_model enum in include/weft/config.h
# (WEFT_MODEL_<NAME> = <n> is model "<name>", as weft_model_name says), so a
# new model's enum entry puts it in the matrix, nothing to edit here; a list
# ("threads;fibers") narrows the matrix. WEFT_TEST_MATRIX holds the runs as
# <model>.w<N> for CMake code that loops over them.
#
# Every test runs with WEFT_TEST=1 and without the WEFT_* variables a user
# may have exported (WEFT_TEST_CLEARED_ENV), so a shell with WEFT_MODEL=spawn
# does not change what ctest tests. Timeouts are multiplied by
# WEFT_TEST_TIMEOUT_SCALE (the sanitizer presets raise it). Sanitizer builds
# also set ASAN_OPTIONS / UBSAN_OPTIONS / TSAN_OPTIONS for every test.
#
# When WEFT_BUILD_TESTS is OFF both functions do nothing, so apps/ and tools/
# may call weft_add_program_test unconditionally.

set(WEFT_TEST_MODELS "all" CACHE STRING
	"Models every MATRIX test runs under ('all': every model in include/weft/config.h)")
# Build directories configured before the matrix covered every model cached
# the old default; bring them up to date rather than quietly test less.
if(WEFT_TEST_MODELS STREQUAL "threads;spawn")
	message(STATUS "WEFT_TEST_MODELS: the old default 'threads;spawn' becomes 'all'")
	set_property(CACHE WEFT_TEST_MODELS PROPERTY VALUE "all")
endif()
set(WEFT_TEST_WORKERS "1;2;4;8" CACHE STRING "Worker counts every MATRIX test runs with")
# fibers runs every task on one worker whatever is asked (M:1): w4 and w8
# would repeat w2. w2 stays, as the run where the count asked for and the
# real one differ (tests must use the real one: wt_workers in tests/harness.h).
set(WEFT_TEST_WORKERS_fibers "1;2" CACHE STRING
	"Worker counts MATRIX tests run with under fibers (instead of WEFT_TEST_WORKERS)")
set(WEFT_TEST_TIMEOUT_SCALE "1" CACHE STRING "Multiplier for every test's TIMEOUT (integer)")

# Every WEFT_* variable docs/configuration.md catalogues; unset for tests.
set(WEFT_TEST_CLEARED_ENV
	WEFT_MODEL WEFT_WORKERS WEFT_POLICY WEFT_QUEUE_CAPACITY WEFT_STACK_SIZE
	WEFT_PREEMPT WEFT_QUANTUM_US WEFT_SEED WEFT_STATS WEFT_TRACE WEFT_IO WEFT_BLOCKING_THREADS)

if(WEFT_BUILD_TESTS OR WEFT_INSTALL_TEST)
	enable_testing()
endif()

# The matrix runs, <model>.w<N> (see the header).
set(_config_h "${PROJECT_SOURCE_DIR}/include/weft/config.h")
if(WEFT_TEST_MODELS STREQUAL "all")
	set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_config_h}")
	file(STRINGS "${_config_h}" _lines REGEX "^[ \t]*WEFT_MODEL_[A-Z0-9_]+[ \t]*=")
	set(_models "")
	foreach(_line IN LISTS _lines)
		string(REGEX MATCH "WEFT_MODEL_([A-Z0-9_]+)" _ "${_line}")
		string(TOLOWER "${CMAKE_MATCH_1}" _model)
		if(NOT _model STREQUAL "count_")
			list(APPEND _models "${_model}")
		endif()
	endforeach()
	if(NOT _models)
		message(FATAL_ERROR "WEFT_TEST_MODELS=all: no WEFT_MODEL_* entries in ${_config_h}")
	endif()
else()
	set(_models ${WEFT_TEST_MODELS})
endif()
set(WEFT_TEST_MATRIX "")
foreach(_model IN LISTS _models)
	if(DEFINED WEFT_TEST_WORKERS_${_model})
		set(_counts ${WEFT_TEST_WORKERS_${_model}})
	else()
		set(_counts ${WEFT_TEST_WORKERS})
	endif()
	foreach(_n IN LISTS _counts)
		if(NOT _n MATCHES "^[1-9][0-9]*$")
			message(FATAL_ERROR "worker count '${_n}' for model ${_model} is not a positive integer")
		endif()
		list(APPEND WEFT_TEST_MATRIX "${_model}.w${_n}")
	endforeach()
endforeach()
if(WEFT_BUILD_TESTS)
	message(STATUS "Test matrix: ${WEFT_TEST_MATRIX}")
endif()
unset(_config_h)
unset(_lines)
unset(_models)
unset(_counts)

if(WEFT_BUILD_TESTS)
	# WEFT_CMOCKA_LIBRARY given on the command line (the aarch64 preset: a
	# static cmocka, scripts/cross-cmocka) is used as it is.
	if(NOT WEFT_CMOCKA_LIBRARY)
		find_package(PkgConfig QUIET)
		if(PKG_CONFIG_FOUND)
			pkg_check_modules(WEFT_CMOCKA QUIET IMPORTED_TARGET cmocka)
		endif()
	endif()
	if(TARGET PkgConfig::WEFT_CMOCKA)
		set(WEFT_CMOCKA_TARGET PkgConfig::WEFT_CMOCKA)
	else()
		find_library(WEFT_CMOCKA_LIBRARY NAMES cmocka)
		find_path(WEFT_CMOCKA_INCLUDE_DIR NAMES cmocka.h)
		if(NOT WEFT_CMOCKA_LIBRARY OR NOT WEFT_CMOCKA_INCLUDE_DIR)
			message(FATAL_ERROR "cmocka not found (Debian: libcmocka-dev); run "
				"scripts/install-deps, or configure with -DWEFT_BUILD_TESTS=OFF")
		endif()
		add_library(weft_cmocka INTERFACE IMPORTED)
		target_link_libraries(weft_cmocka INTERFACE "${WEFT_CMOCKA_LIBRARY}")
		target_include_directories(weft_cmocka INTERFACE "${WEFT_CMOCKA_INCLUDE_DIR}")
		set(WEFT_CMOCKA_TARGET weft_cmocka)
	endif()

	if(NOT WEFT_TEST_TIMEOUT_SCALE MATCHES "^[1-9][0-9]*$")
		message(FATAL_ERROR "WEFT_TEST_TIMEOUT_SCALE must be a positive integer")
	endif()

	# The environment every test starts from: see the header.
	set(_env "WEFT_TEST=set:1")
	foreach(_var IN LISTS WEFT_TEST_CLEARED_ENV)
		list(APPEND _env "${_var}=unset:")
	endforeach()
	if(WEFT_SANITIZE STREQUAL "address")
		list(APPEND _env
			"ASAN_OPTIONS=set:detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1"
			"UBSAN_OPTIONS=set:print_stacktrace=1:halt_on_error=1")
	elseif(WEFT_SANITIZE STREQUAL "thread")
		list(APPEND _env "TSAN_OPTIONS=set:halt_on_error=1:second_deadlock_stack=1")
	endif()
	set(WEFT_TEST_ENV_MODIFICATION "${_env}")
	unset(_env)
endif()

# _weft_test_properties(<test> <timeout> <labels> [<VAR=value>...]): the
# properties every weft test gets. Extra VAR=value pairs are set after the
# clearing, so they win.
function(_weft_test_properties test timeout labels)
	math(EXPR _timeout "${timeout} * ${WEFT_TEST_TIMEOUT_SCALE}")
	set(_env ${WEFT_TEST_ENV_MODIFICATION})
	foreach(_kv IN LISTS ARGN)
		if(NOT _kv MATCHES "^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
			message(FATAL_ERROR "${test}: ENVIRONMENT entry '${_kv}' is not VAR=value")
		endif()
		list(APPEND _env "${CMAKE_MATCH_1}=set:${CMAKE_MATCH_2}")
	endforeach()
	set_tests_properties("${test}" PROPERTIES
		TIMEOUT ${_timeout}
		LABELS "${labels}"
		ENVIRONMENT_MODIFICATION "${_env}")
endfunction()

function(weft_add_cmocka_test name)
	if(NOT WEFT_BUILD_TESTS)
		return()
	endif()
	cmake_parse_arguments(PARSE_ARGV 1 ARG "MATRIX" "TIMEOUT" "SOURCES;CASES;LIBS")
	if(ARG_UNPARSED_ARGUMENTS)
		message(FATAL_ERROR "weft_add_cmocka_test(${name}): unknown arguments "
			"${ARG_UNPARSED_ARGUMENTS}")
	endif()
	if(NOT ARG_SOURCES OR NOT ARG_CASES)
		message(FATAL_ERROR "weft_add_cmocka_test(${name}): SOURCES and CASES are required")
	endif()
	if(NOT DEFINED ARG_TIMEOUT)
		set(ARG_TIMEOUT 60)
	endif()

	set(_exe test_${name})
	add_executable(${_exe} ${ARG_SOURCES})
	target_include_directories(${_exe} PRIVATE
		"${PROJECT_SOURCE_DIR}/src" "${PROJECT_SOURCE_DIR}/tests")
	# WEFT_PORTABLE as the library has it: the src/ headers tests include
	# read it, and a test may expect what only Linux's backend does.
	target_compile_definitions(${_exe} PRIVATE _GNU_SOURCE
		$<$<BOOL:${WEFT_SANITIZE}>:WEFT_TEST_UNDER_SANITIZER=1>
		$<$<BOOL:${WEFT_PORTABLE}>:WEFT_PORTABLE=1>)
	target_link_libraries(${_exe} PRIVATE
		weft_static ${WEFT_CMOCKA_TARGET} Threads::Threads ${ARG_LIBS})

	foreach(_case IN LISTS ARG_CASES)
		if(NOT ARG_MATRIX)
			set(_test ${name}.${_case})
			add_test(NAME ${_test} COMMAND ${_exe} ${_case})
			_weft_test_properties(${_test} ${ARG_TIMEOUT} "cmocka;${name}")
			set_tests_properties(${_test} PROPERTIES
				SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
			continue()
		endif()
		foreach(_run IN LISTS WEFT_TEST_MATRIX)
			string(REGEX MATCH "^(.*)\\.w([0-9]+)$" _ "${_run}")
			set(_model ${CMAKE_MATCH_1})
			set(_test ${name}.${_case}.${_run})
			add_test(NAME ${_test} COMMAND ${_exe} ${_case} ${_model} ${CMAKE_MATCH_2})
			_weft_test_properties(${_test} ${ARG_TIMEOUT} "cmocka;${name};${_model}")
			set_tests_properties(${_test} PROPERTIES
				SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
		endforeach()
	endforeach()
endfunction()

function(weft_add_program_test name)
	if(NOT WEFT_BUILD_TESTS)
		return()
	endif()
	cmake_parse_arguments(PARSE_ARGV 1 ARG "WILL_FAIL;MATRIX"
		"PASS_REGULAR_EXPRESSION;FAIL_REGULAR_EXPRESSION;TIMEOUT;WORKING_DIRECTORY"
		"COMMAND;ENVIRONMENT")
	if(ARG_UNPARSED_ARGUMENTS)
		message(FATAL_ERROR "weft_add_program_test(${name}): unknown arguments "
			"${ARG_UNPARSED_ARGUMENTS}")
	endif()
	if(NOT ARG_COMMAND)
		message(FATAL_ERROR "weft_add_program_test(${name}): COMMAND is required")
	endif()
	if(NOT DEFINED ARG_TIMEOUT)
		set(ARG_TIMEOUT 60)
	endif()
	set(_wd "")
	if(DEFINED ARG_WORKING_DIRECTORY)
		set(_wd WORKING_DIRECTORY "${ARG_WORKING_DIRECTORY}")
	endif()

	if(ARG_MATRIX)
		set(_runs ${WEFT_TEST_MATRIX})
	else()
		set(_runs "-")
	endif()

	foreach(_run IN LISTS _runs)
		set(_env ${ARG_ENVIRONMENT})
		set(_labels "program;${name}")
		if(_run STREQUAL "-")
			set(_test ${name})
		else()
			set(_test ${name}.${_run})
			string(REGEX MATCH "^(.*)\\.w([0-9]+)$" _ "${_run}")
			list(APPEND _env "WEFT_MODEL=${CMAKE_MATCH_1}" "WEFT_WORKERS=${CMAKE_MATCH_2}")
			list(APPEND _labels "${CMAKE_MATCH_1}")
		endif()
		add_test(NAME ${_test} COMMAND ${ARG_COMMAND} ${_wd})
		_weft_test_properties(${_test} ${ARG_TIMEOUT} "${_labels}" ${_env})
		if(ARG_WILL_FAIL)
			set_tests_properties(${_test} PROPERTIES WILL_FAIL TRUE)
		endif()
		if(DEFINED ARG_PASS_REGULAR_EXPRESSION)
			set_tests_properties(${_test} PROPERTIES
				PASS_REGULAR_EXPRESSION "${ARG_PASS_REGULAR_EXPRESSION}")
		endif()
		if(DEFINED ARG_FAIL_REGULAR_EXPRESSION)
			set_tests_properties(${_test} PROPERTIES
				FAIL_REGULAR_EXPRESSION "${ARG_FAIL_REGULAR_EXPRESSION}")
		endif()
	endforeach()
endfunction()

# weft_portable_skip(<regex> <reason>): in the portable build (WEFT_PORTABLE,
# docs/platforms.md), the tests of the current directory whose name matches
# regex are disabled (ctest lists them as "Not Run (Disabled)"): they test
# a capability only Linux's backend has. The reason is said at configure
# time and in docs/platforms.md; keep the list short.
function(weft_portable_skip regex reason)
	if(NOT WEFT_PORTABLE OR NOT WEFT_BUILD_TESTS)
		return()
	endif()
	get_property(_tests DIRECTORY PROPERTY TESTS)
	set(_skipped "")
	foreach(_t IN LISTS _tests)
		if(_t MATCHES "${regex}")
			list(APPEND _skipped "${_t}")
		endif()
	endforeach()
	if(NOT _skipped)
		message(FATAL_ERROR "weft_portable_skip: no test matches '${regex}'")
	endif()
	set_tests_properties(${_skipped} PROPERTIES DISABLED TRUE)
	list(LENGTH _skipped _n)
	message(STATUS "portable: ${_n} test(s) ${regex} skipped: ${reason}")
endfunction()
