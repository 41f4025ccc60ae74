# Link-level drop-ins for the seed APIs: libweft-tsl.a, libweft-worker.a and
# libweft-sched.a, and their pkg-config files (weft-tsl.pc, ...). Included
# from the root CMakeLists.txt, after WeftInstall.
#
# libweft exports the seed APIs only as weft_compat_<name> (the headers in
# include/weft/compat/ map the seeds' names onto those), so a program that
# keeps its own copy of a seed's header (tsl.h, thread-worker.h, the seed's
# sched.h) compiles and then fails to link against it. Each drop-in is one
# file of src/compat/dropin/ that defines the seed's own names, forwarding
# to libweft's, archived together with every object of libweft: one
# self-contained static library per seed API, as the seeds' own were, so
# that replacing the student library in a Makefile (-ltsl -> -lweft-tsl)
# is all a program needs. docs/compat*.md give the exact command lines, and
# tests/compat/dropin tests them.
#
# Static only: a shared drop-in would need the program to be told where it
# is at run time (rpath or LD_LIBRARY_PATH), which the seeds' Makefiles do
# not do. The archives go next to libweft in the build tree, so one -L
# serves both.

set(WEFT_COMPAT_DROPINS tsl worker sched)
set(_weft_dropin_what_tsl "the seed Thread Support Library (tsl.h)")
set(_weft_dropin_what_worker "the Rutgers thread-worker API (thread-worker.h)")
set(_weft_dropin_what_sched "the CMPE 180C scheduler API (sched.h)")
# Where a program that uses weft's header instead of its own finds it.
set(_weft_dropin_inc_tsl "weft/compat")
set(_weft_dropin_inc_worker "weft/compat/benchmarks")
set(_weft_dropin_inc_sched "weft/compat")

foreach(_api IN LISTS WEFT_COMPAT_DROPINS)
	set(_target weft_${_api})
	add_library(${_target} STATIC
		"${PROJECT_SOURCE_DIR}/src/compat/dropin/${_api}.c"
		$<TARGET_OBJECTS:weft_objects>)
	set_target_properties(${_target} PROPERTIES
		OUTPUT_NAME weft-${_api}
		EXPORT_NAME weft_${_api}
		POSITION_INDEPENDENT_CODE ON
		C_VISIBILITY_PRESET hidden
		ARCHIVE_OUTPUT_DIRECTORY "$<TARGET_FILE_DIR:weft_static>")
	target_include_directories(${_target}
		PUBLIC
			"$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>"
			"$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>"
		PRIVATE "${PROJECT_SOURCE_DIR}/src")
	target_compile_definitions(${_target} PRIVATE _GNU_SOURCE)
	target_link_libraries(${_target} PUBLIC Threads::Threads)

	set(WEFT_DROPIN_API ${_api})
	set(WEFT_DROPIN_WHAT "${_weft_dropin_what_${_api}}")
	set(WEFT_DROPIN_INCLUDE "${_weft_dropin_inc_${_api}}")
	# Located like weft.pc (WeftInstall.cmake). Cflags name weft's header
	# for the programs that use it; a program keeping its own header still
	# finds its own first ("tsl.h" and "../thread-worker.h" are looked up
	# beside the source first; the seed's -I ../sched comes before).
	file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/weft-${_api}.pc" @ONLY CONTENT [=[
prefix=@WEFT_PC_PREFIX@
exec_prefix=${prefix}
libdir=@WEFT_PC_LIBDIR@
includedir=@WEFT_PC_INCLUDEDIR@

Name: weft-@WEFT_DROPIN_API@
Description: @WEFT_DROPIN_WHAT@ on weft: drop-in for the seed's own library
Version: @PROJECT_VERSION@
Libs: -L${libdir} -lweft-@WEFT_DROPIN_API@ -pthread
Cflags: -I${includedir}/@WEFT_DROPIN_INCLUDE@
]=])
	install(FILES "${PROJECT_BINARY_DIR}/weft-${_api}.pc"
		DESTINATION "${WEFT_PKGCONFIG_INSTALL_DIR}"
		COMPONENT Development)
endforeach()

install(TARGETS weft_tsl weft_worker weft_sched
	EXPORT weftTargets
	ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT Development
	INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
