# ctest install.find_package, run as `cmake -P`: installs the build tree into
# WEFT_STAGE, then builds cmake/consumer against that prefix twice,
#   1. with CMake: find_package(weft REQUIRED), linking weft::weft and
#      weft::weft_static;
#   2. with pkg-config: cc main.c $(pkg-config --cflags --libs weft), and
#      c++ -std=c++17 main.cpp the same way (the C++ header, weft/weft.hpp),
# and runs every program built (the C++ ones: consumer_cpp with
# weft::weft_cpp, consumer_cpp_plain with weft::weft). With WEFT_EXPECT_MPI
# (weft-mpi was built) the same for main_mpi.c: find_package(weft COMPONENTS
# mpi) -> weft::weft_mpi, and pkg-config weft-mpi; run alone as an MPI
# singleton. Fails on the first step that fails.
#
# Inputs (-D): WEFT_BINARY_DIR, WEFT_STAGE, WEFT_LIBDIR, WEFT_CONSUMER_SOURCE,
# WEFT_GENERATOR, WEFT_C_COMPILER, WEFT_CXX_COMPILER, WEFT_C_FLAGS (sanitizer
# flags, may be empty; used for C++ too), WEFT_EXPECT_MPI (1 or 0),
# WEFT_DOCS_HTML (the installed reference's index.html under the prefix, or
# empty when Doxygen was not found), WEFT_STAGE_READY (1: WEFT_STAGE is
# installed already, by the packages: cmake/WeftPackageTest.cmake).
cmake_minimum_required(VERSION 3.25)

foreach(_var WEFT_BINARY_DIR WEFT_STAGE WEFT_LIBDIR WEFT_CONSUMER_SOURCE WEFT_GENERATOR
	     WEFT_C_COMPILER WEFT_CXX_COMPILER)
	if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
		message(FATAL_ERROR "WeftInstallTest.cmake: ${_var} is not set")
	endif()
endforeach()

include("${CMAKE_CURRENT_LIST_DIR}/WeftRun.cmake")

set(_work "${WEFT_BINARY_DIR}/consumer")
if(WEFT_STAGE_READY)
	file(REMOVE_RECURSE "${_work}")
else()
	file(REMOVE_RECURSE "${WEFT_STAGE}" "${_work}")
endif()
file(MAKE_DIRECTORY "${_work}")

if(NOT WEFT_STAGE_READY)
	run("install" "${CMAKE_COMMAND}" --install "${WEFT_BINARY_DIR}" --prefix "${WEFT_STAGE}")
endif()

foreach(_f "include/weft/weft.h" "include/weft/weft.hpp" "${WEFT_LIBDIR}/libweft.a" "${WEFT_LIBDIR}/libweft.so"
	   "${WEFT_LIBDIR}/libweft.so.0" "${WEFT_LIBDIR}/pkgconfig/weft.pc"
	   "${WEFT_LIBDIR}/cmake/weft/weftConfig.cmake"
	   "${WEFT_LIBDIR}/cmake/weft/weftConfigVersion.cmake" ${WEFT_DOCS_HTML})
	if(NOT EXISTS "${WEFT_STAGE}/${_f}")
		message(FATAL_ERROR "install did not produce ${WEFT_STAGE}/${_f}")
	endif()
endforeach()

# 1. find_package. Only the stage may provide weft: no package registry, and
# the cache must name the stage's config.
set(_cbuild "${_work}/cmake-build")
run("consumer configure" "${CMAKE_COMMAND}" -S "${WEFT_CONSUMER_SOURCE}" -B "${_cbuild}"
	-G "${WEFT_GENERATOR}"
	"-DCMAKE_C_COMPILER=${WEFT_C_COMPILER}"
	"-DCMAKE_C_FLAGS=${WEFT_C_FLAGS}"
	"-DCMAKE_CXX_COMPILER=${WEFT_CXX_COMPILER}"
	"-DCMAKE_CXX_FLAGS=${WEFT_C_FLAGS}"
	"-DCMAKE_PREFIX_PATH=${WEFT_STAGE}"
	-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
	"-DWEFT_EXPECT_MPI=${WEFT_EXPECT_MPI}"
	-DCMAKE_BUILD_TYPE=RelWithDebInfo)
file(STRINGS "${_cbuild}/CMakeCache.txt" _weft_dir REGEX "^weft_DIR:")
string(FIND "${_weft_dir}" "${WEFT_STAGE}/" _at)
if(NOT _at GREATER -1)
	message(FATAL_ERROR "find_package(weft) did not use the stage: ${_weft_dir}")
endif()
run("consumer build" "${CMAKE_COMMAND}" --build "${_cbuild}")
run("run consumer (weft::weft)" "${_cbuild}/consumer")
message(STATUS "${run_output}")
run("run consumer_static (weft::weft_static)" "${_cbuild}/consumer_static")
run("run consumer_cpp (weft::weft_cpp)" "${_cbuild}/consumer_cpp")
message(STATUS "${run_output}")
run("run consumer_cpp_plain (weft::weft, C++17)" "${_cbuild}/consumer_cpp_plain")

# 2. pkg-config, with the stage's weft.pc first on the search path.
find_program(_pkg_config NAMES pkg-config pkgconf REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${WEFT_STAGE}/${WEFT_LIBDIR}/pkgconfig")
run("pkg-config" "${_pkg_config}" --cflags --libs weft)
string(STRIP "${run_output}" _pc_flags)
separate_arguments(_pc_flags UNIX_COMMAND "${_pc_flags}")
separate_arguments(_extra UNIX_COMMAND "${WEFT_C_FLAGS}")
run("pkg-config build" "${WEFT_C_COMPILER}" ${_extra} "${WEFT_CONSUMER_SOURCE}/main.c"
	${_pc_flags} -o "${_work}/consumer_pc")
set(ENV{LD_LIBRARY_PATH} "${WEFT_STAGE}/${WEFT_LIBDIR}")
run("run consumer_pc" "${_work}/consumer_pc")
run("pkg-config build (C++)" "${WEFT_CXX_COMPILER}" -std=c++17 ${_extra}
	"${WEFT_CONSUMER_SOURCE}/main.cpp" ${_pc_flags} -o "${_work}/consumer_pc_cpp")
run("run consumer_pc_cpp" "${_work}/consumer_pc_cpp")

if(WEFT_EXPECT_MPI)
	foreach(_f "${WEFT_LIBDIR}/libweft_mpi.a" "${WEFT_LIBDIR}/pkgconfig/weft-mpi.pc"
		   "${WEFT_LIBDIR}/cmake/weft/weftMPITargets.cmake" "include/weft/mpi.h")
		if(NOT EXISTS "${WEFT_STAGE}/${_f}")
			message(FATAL_ERROR "install did not produce ${WEFT_STAGE}/${_f}")
		endif()
	endforeach()
	# Open MPI refuses root unless told; a singleton needs no mpiexec.
	set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
	set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
	run("run consumer_mpi (weft::weft_mpi)" "${_cbuild}/consumer_mpi")
	message(STATUS "${run_output}")
	run("pkg-config weft-mpi" "${_pkg_config}" --cflags --libs weft-mpi)
	string(STRIP "${run_output}" _pc_mpi)
	separate_arguments(_pc_mpi UNIX_COMMAND "${_pc_mpi}")
	run("pkg-config weft-mpi build" "${WEFT_C_COMPILER}" ${_extra}
		"${WEFT_CONSUMER_SOURCE}/main_mpi.c" ${_pc_mpi} -o "${_work}/consumer_mpi_pc")
	run("run consumer_mpi_pc" "${_work}/consumer_mpi_pc")
endif()

message(STATUS "install.find_package: ok")
