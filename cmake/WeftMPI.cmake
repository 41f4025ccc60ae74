# weft-mpi: the optional MPI component (include/weft/mpi.h, mpi/weft_mpi.c),
# included from the root CMakeLists.txt after the weft libraries.
#
#   WEFT_MPI        option, default ON: build weft-mpi when MPI is found
#   WEFT_HAVE_MPI   TRUE when it is built (apps/, tests/mpi, bench/mpi read it)
#   weft_mpi        static library, links weft_static and MPI::MPI_C;
#                   installed as libweft_mpi.a
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
	# Installed beside libweft.a (weft/mpi.h goes with the other headers);
	# link a consumer with -lweft_mpi -lweft and MPI's flags (mpicc).
	install(TARGETS weft_mpi ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
	set(WEFT_MPIEXEC "${MPIEXEC_EXECUTABLE}")
	execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version
		OUTPUT_VARIABLE _mpiexec_version ERROR_QUIET)
	if(_mpiexec_version MATCHES "Open MPI|OpenRTE")
		list(APPEND WEFT_MPIEXEC --oversubscribe --allow-run-as-root)
	endif()
	unset(_mpiexec_version)
	find_package(OpenMP COMPONENTS C QUIET)
endif()
