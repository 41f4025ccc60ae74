# weft-mpi: the optional MPI component (include/weft/mpi.h, mpi/weft_mpi.c),
# included from the root CMakeLists.txt after the weft libraries.
#
#   WEFT_MPI        option, default ON: build weft-mpi when MPI is found
#   WEFT_HAVE_MPI   TRUE when it is built (apps/, tests/mpi, bench/mpi read it)
#   weft_mpi        static library, links weft_static and MPI::MPI_C;
#                   installed as libweft_mpi.a, exported as weft::weft_mpi
#                   (weftMPITargets.cmake, read by weftConfig.cmake when
#                   present) and described by weft-mpi.pc
#   WEFT_MPI_HAVE_CONTINUE, WEFT_MPI_HAVE_ASYNC
#                   whether the MPI library has MPIX_Continue (completion
#                   callbacks) and MPIX_Async_start (MPICH 4.2's async
#                   hooks); said at configure time and defined for weft_mpi.c
#                   (docs/mpi.md: which path each MPI gets)
#   WEFT_MPIEXEC    mpiexec with the flags every local run needs (ctest, bench):
#                   --oversubscribe (2 CPUs, 4 ranks) and, as root, Open MPI's
#                   --allow-run-as-root
#
# Debian: libopenmpi-dev and openmpi-bin (scripts/install-deps). Without
# them nothing here is built and `--mpi` in the apps says it is unavailable.

option(WEFT_MPI "Build weft-mpi (MPI requests waited for by weft) when MPI is found" ON)
set(WEFT_HAVE_MPI FALSE)
if(WEFT_MPI)
	find_package(MPI COMPONENTS C QUIET)
	if(MPI_C_FOUND)
		set(WEFT_HAVE_MPI TRUE)
	else()
		message(STATUS "weft-mpi: MPI not found (Debian: libopenmpi-dev openmpi-bin); not built")
	endif()
endif()

if(WEFT_HAVE_MPI)
	message(STATUS "weft-mpi: MPI ${MPI_C_VERSION} (${MPIEXEC_EXECUTABLE})")
	add_library(weft_mpi STATIC "${PROJECT_SOURCE_DIR}/mpi/weft_mpi.c")
	target_link_libraries(weft_mpi PUBLIC weft_static MPI::MPI_C Threads::Threads)
	target_compile_definitions(weft_mpi PRIVATE _GNU_SOURCE)

	include(CheckSymbolExists)
	set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
	check_symbol_exists(MPIX_Continue "mpi.h;mpi-ext.h" WEFT_MPI_HAVE_CONTINUE)
	check_symbol_exists(MPIX_Async_start "mpi.h" WEFT_MPI_HAVE_ASYNC)
	unset(CMAKE_REQUIRED_LIBRARIES)
	set(_said "")
	foreach(_have WEFT_MPI_HAVE_CONTINUE WEFT_MPI_HAVE_ASYNC)
		if(${_have})
			target_compile_definitions(weft_mpi PRIVATE ${_have}=1)
			list(APPEND _said "${_have}")
		endif()
	endforeach()
	if(NOT _said)
		set(_said "neither MPIX_Continue nor MPIX_Async_start")
	endif()
	message(STATUS "weft-mpi: ${_said}; waits are found by the scheduler's "
		"progress duty (MPI_Testsome, docs/mpi.md)")
	unset(_said)

	# Installed beside libweft.a (weft/mpi.h goes with the other headers):
	# find_package(weft) gives weft::weft_mpi when MPI is found there too;
	# pkg-config --cflags --libs weft-mpi gives the flags, MPI's included.
	install(TARGETS weft_mpi EXPORT weftMPITargets
		ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT Mpi
		INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
	install(EXPORT weftMPITargets
		NAMESPACE weft::
		FILE weftMPITargets.cmake
		DESTINATION "${WEFT_CMAKE_INSTALL_DIR}"
		COMPONENT Mpi)
	set(WEFT_PC_MPI_NAME "MPI ${MPI_C_VERSION}")
	set(WEFT_PC_MPI_LIBS "")
	foreach(_lib IN LISTS MPI_C_LIBRARIES)
		string(APPEND WEFT_PC_MPI_LIBS " ${_lib}")
	endforeach()
	string(STRIP "${WEFT_PC_MPI_LIBS} ${MPI_C_LINK_FLAGS}" WEFT_PC_MPI_LIBS)
	set(WEFT_PC_MPI_CFLAGS "")
	foreach(_dir IN LISTS MPI_C_INCLUDE_DIRS)
		string(APPEND WEFT_PC_MPI_CFLAGS " -I${_dir}")
	endforeach()
	foreach(_def IN LISTS MPI_C_COMPILE_DEFINITIONS)
		string(APPEND WEFT_PC_MPI_CFLAGS " -D${_def}")
	endforeach()
	string(STRIP "${WEFT_PC_MPI_CFLAGS} ${MPI_C_COMPILE_OPTIONS}" WEFT_PC_MPI_CFLAGS)
	configure_file("${CMAKE_CURRENT_LIST_DIR}/weft-mpi.pc.in"
		"${PROJECT_BINARY_DIR}/weft-mpi.pc" @ONLY)
	install(FILES "${PROJECT_BINARY_DIR}/weft-mpi.pc"
		DESTINATION "${WEFT_PKGCONFIG_INSTALL_DIR}"
		COMPONENT Mpi)
	set(WEFT_MPIEXEC "${MPIEXEC_EXECUTABLE}")
	execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version
		OUTPUT_VARIABLE _mpiexec_version ERROR_QUIET)
	if(_mpiexec_version MATCHES "Open MPI|OpenRTE")
		list(APPEND WEFT_MPIEXEC --oversubscribe --allow-run-as-root)
	endif()
	unset(_mpiexec_version)
	find_package(OpenMP COMPONENTS C QUIET)
endif()
