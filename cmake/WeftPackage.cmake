# What `make install` / `cmake --install` installs beyond the library
# (WeftInstall.cmake), and the Debian packages cpack builds from the same
# install rules (`make package`). Included from the root CMakeLists.txt
# after every subdirectory, so the programs' targets exist.
#
# Install components, one package each:
#   Runtime        libweft0        libweft.so.0 and its license
#   Development    libweft-dev     headers, libweft.a, libweft.so, weft.pc,
#                                  the CMake package, the seed drop-ins and
#                                  their .pc files
#   Mpi            libweft-mpi-dev libweft_mpi.a, weft-mpi.pc, weft::weft_mpi
#                                  (only when MPI was found)
#   Tools          weft-tools      weft-sweep, weft-trace-plot, weft-probe,
#                                  the applications, their man pages
#   Documentation  weft-doc        the guides (docs/), README, the examples,
#                                  the HTML reference
#
# The Python tools go to <libexecdir>/weft with weftcli.py beside them and a
# relative symlink in <bindir>, so they find their module wherever the tree
# is installed. Man pages are made from each program's --help and --version
# by help2man (a missing help2man skips them, with a message).
#
# With WEFT_INSTALL_TEST, ctest install.packages builds the packages, installs
# them into a fresh root with dpkg --root, builds the consumers against that
# root (cmake/WeftPackageTest.cmake) and runs the tools and man from it; and
# install.abi compares libweft.so's exports and the public struct sizes with
# the lists under abi/ (scripts/check-abi).

set(WEFT_TOOL_PROGRAMS weft-probe weft-demo weft-psort weft-matmul weft-sudoku
	weft-ticker weft-haunted)
set(_weft_man_weft-probe "measure the machine as the seed reports did: timers, system calls, switches, TLB")
set(_weft_man_weft-demo "a tour of weft: one program on every threading model, with the figures")
set(_weft_man_weft-psort "parallel sort of integer records on weft (radix and K-way merge)")
set(_weft_man_weft-matmul "parallel matrix multiplication on weft")
set(_weft_man_weft-sudoku "check sudoku solutions in parallel on weft")
set(_weft_man_weft-ticker "a stock ticker that fetches quotes concurrently on weft")
set(_weft_man_weft-haunted "the haunted house simulation on weft")
set(_weft_man_weft-sweep "run a command over worker counts and models, find the knee, plot it")
set(_weft_man_weft-trace-plot "draw a weft trace (WEFT_TRACE) as lanes of tasks per worker")

set(_weft_installed_programs "")
foreach(_prog IN LISTS WEFT_TOOL_PROGRAMS)
	if(TARGET ${_prog})
		install(TARGETS ${_prog} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT Tools)
		list(APPEND _weft_installed_programs ${_prog})
	endif()
endforeach()

set(_weft_libexec "${CMAKE_INSTALL_LIBEXECDIR}/weft")
file(RELATIVE_PATH _weft_bin_to_libexec "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${_weft_libexec}")
set(_weft_links "${PROJECT_BINARY_DIR}/tool-links")
file(MAKE_DIRECTORY "${_weft_links}")
foreach(_script weft-sweep weft-trace-plot)
	install(PROGRAMS "${PROJECT_SOURCE_DIR}/tools/${_script}"
		DESTINATION "${_weft_libexec}" COMPONENT Tools)
	file(CREATE_LINK "${_weft_bin_to_libexec}/${_script}" "${_weft_links}/${_script}" SYMBOLIC)
	install(FILES "${_weft_links}/${_script}" DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT Tools)
endforeach()
# The version the tools print, which they read from the source tree's
# weft.h when they run from it.
file(WRITE "${_weft_links}/VERSION" "${PROJECT_VERSION}\n")
install(FILES "${PROJECT_SOURCE_DIR}/tools/weftcli.py" "${_weft_links}/VERSION"
	DESTINATION "${_weft_libexec}" COMPONENT Tools)

find_program(WEFT_HELP2MAN help2man)
find_package(Python3 COMPONENTS Interpreter QUIET)
if(WEFT_HELP2MAN AND Python3_Interpreter_FOUND)
	set(_weft_man_dir "${PROJECT_BINARY_DIR}/man/man1")
	file(MAKE_DIRECTORY "${_weft_man_dir}")
	set(_weft_man_pages "")
	foreach(_prog IN LISTS _weft_installed_programs ITEMS weft-sweep weft-trace-plot)
		if(TARGET ${_prog})
			set(_exe "$<TARGET_FILE:${_prog}>")
			set(_deps ${_prog})
		else()
			set(_exe "${PROJECT_SOURCE_DIR}/tools/${_prog}")
			set(_deps "${_exe}" "${PROJECT_SOURCE_DIR}/tools/weftcli.py")
		endif()
		add_custom_command(OUTPUT "${_weft_man_dir}/${_prog}.1"
			COMMAND "${WEFT_HELP2MAN}" --no-info --no-discard-stderr
				"--name=${_weft_man_${_prog}}" "--output=${_weft_man_dir}/${_prog}.1" "${_exe}"
			DEPENDS ${_deps}
			COMMENT "man page: ${_prog}.1 (help2man)"
			VERBATIM)
		list(APPEND _weft_man_pages "${_weft_man_dir}/${_prog}.1")
	endforeach()
	add_custom_target(weft_man ALL DEPENDS ${_weft_man_pages})
	install(FILES ${_weft_man_pages} DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" COMPONENT Tools)
else()
	message(STATUS "weft: help2man or python3 not found: no man pages (scripts/install-deps installs help2man)")
endif()

# The guides and the examples, beside the reference and the license.
install(FILES "${PROJECT_SOURCE_DIR}/README.md"
	DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT Documentation)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/"
	DESTINATION "${CMAKE_INSTALL_DOCDIR}/docs" COMPONENT Documentation)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/examples/"
	DESTINATION "${CMAKE_INSTALL_DOCDIR}/examples" COMPONENT Documentation
	PATTERN "CMakeLists.txt" EXCLUDE)

# ---------------------------------------------------------------- packages

set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR "the weft developers")
set(CPACK_PACKAGE_CONTACT "weft developers <weft@localhost>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "write a multithreaded C program once, choose at run time how it runs")
set(CPACK_PACKAGE_DESCRIPTION "weft is a C11 library of tasks, fork-join, parallel loops, channels, \
synchronisation and I/O whose threading model (a kernel-thread pool, fibers \
on one thread, fibers over a work-stealing pool, a thread per task) is chosen \
at run time, with statistics, traces and probes built in.")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_COMPONENTS_ALL Runtime Development Tools Documentation)
if(TARGET weft_mpi)
	list(APPEND CPACK_COMPONENTS_ALL Mpi)
endif()
set(_weft_exact "(= ${PROJECT_VERSION})")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libweft0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "weft: the shared library (libweft.so.0)\n${CPACK_PACKAGE_DESCRIPTION}")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libweft-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "libweft0 ${_weft_exact}")
set(CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION "weft: headers, static library, pkg-config and CMake files\n\
Headers (C and C++), libweft.a, weft.pc, find_package(weft), and the seed drop-in libraries.")

set(CPACK_DEBIAN_MPI_PACKAGE_NAME libweft-mpi-dev)
set(CPACK_DEBIAN_MPI_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_MPI_PACKAGE_DEPENDS "libweft-dev ${_weft_exact}, libopenmpi-dev")
set(CPACK_DEBIAN_MPI_DESCRIPTION "weft: MPI inside weft tasks (weft_mpi)\n\
libweft_mpi.a, weft-mpi.pc and weft::weft_mpi.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME weft-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "gnuplot-nox")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "weft: weft-sweep, weft-trace-plot, weft-probe and the applications\n\
The sweep tool, the trace plotter, the machine probe and the demo and seed applications, with man pages.")

set(CPACK_DEBIAN_DOCUMENTATION_PACKAGE_NAME weft-doc)
set(CPACK_DEBIAN_DOCUMENTATION_PACKAGE_SECTION doc)
set(CPACK_DEBIAN_DOCUMENTATION_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_DOCUMENTATION_DESCRIPTION "weft: guides, examples and the API reference\n\
The tutorial, the guides (pitfalls, migration, tuning, FAQ), the examples and the HTML reference.")

include(CPack)

if(WEFT_INSTALL_TEST)
	add_test(NAME install.packages
		COMMAND "${CMAKE_COMMAND}"
			"-DWEFT_BINARY_DIR=${PROJECT_BINARY_DIR}"
			"-DWEFT_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
			"-DWEFT_CONSUMER_SOURCE=${CMAKE_CURRENT_LIST_DIR}/consumer"
			"-DWEFT_GENERATOR=${CMAKE_GENERATOR}"
			"-DWEFT_C_COMPILER=${CMAKE_C_COMPILER}"
			"-DWEFT_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
			"-DWEFT_C_FLAGS=${WEFT_SANITIZE_FLAGS}"
			"-DWEFT_EXPECT_MPI=$<TARGET_EXISTS:weft_mpi>"
			"-DWEFT_EXPECT_MAN=$<BOOL:${WEFT_HELP2MAN}>"
			-P "${CMAKE_CURRENT_LIST_DIR}/WeftPackageTest.cmake")
	set_tests_properties(install.packages PROPERTIES
		TIMEOUT 600
		LABELS install
		RESOURCE_LOCK weft_stage)

	add_test(NAME install.abi
		COMMAND "${PROJECT_SOURCE_DIR}/scripts/check-abi" "$<TARGET_FILE:weft_shared>")
	set_tests_properties(install.abi PROPERTIES TIMEOUT 60 LABELS install)
endif()
