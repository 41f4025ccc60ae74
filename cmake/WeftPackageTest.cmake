# ctest install.packages, run as `cmake -P`: builds the Debian packages of
# this build tree (cpack, cmake/WeftPackage.cmake), installs them into a
# fresh root with `dpkg --root` (an empty dpkg database; dependencies on
# Debian's own packages are those of the machine, hence --force-depends),
# then, from that root alone:
#   - builds and runs the C and C++ consumers with find_package(weft) and
#     with pkg-config (and weft-mpi's when MPI was built), through
#     cmake/WeftInstallTest.cmake with the root as its stage;
#   - runs the installed tools' --help and reads their man pages with man;
#   - checks that the guides are there.
#
# Inputs (-D): WEFT_BINARY_DIR, WEFT_SOURCE_DIR, WEFT_CONSUMER_SOURCE,
# WEFT_GENERATOR, WEFT_C_COMPILER, WEFT_CXX_COMPILER, WEFT_C_FLAGS,
# WEFT_EXPECT_MPI, WEFT_EXPECT_MAN (1 or 0).
cmake_minimum_required(VERSION 3.25)

include("${CMAKE_CURRENT_LIST_DIR}/WeftRun.cmake")

find_program(_dpkg dpkg REQUIRED)
find_program(_cpack cpack HINTS "${CMAKE_COMMAND}/.." REQUIRED)
set(_packages "${WEFT_BINARY_DIR}/packages")
set(_root "${WEFT_BINARY_DIR}/pkgroot")
file(REMOVE_RECURSE "${_packages}" "${_root}")

run("cpack" "${_cpack}" --config "${WEFT_BINARY_DIR}/CPackConfig.cmake" -B "${_packages}")
file(GLOB _debs "${_packages}/*.deb")
set(_want libweft0 libweft-dev weft-tools weft-doc)
if(WEFT_EXPECT_MPI)
	list(APPEND _want libweft-mpi-dev)
endif()
foreach(_p IN LISTS _want)
	if(NOT _debs MATCHES "/${_p}_[^/]*\\.deb")
		message(FATAL_ERROR "cpack made no ${_p} package (made: ${_debs})")
	endif()
endforeach()

# The shared library carries its soname and the package says so.
set(_runtime_deb "${_debs}")
list(FILTER _runtime_deb INCLUDE REGEX "/libweft0_[^/]*\\.deb$")
run("dpkg-deb contents" dpkg-deb -c ${_runtime_deb})
if(NOT run_output MATCHES "libweft\\.so\\.0 ->")
	message(FATAL_ERROR "no libweft.so.0 link in the packages:\n${run_output}")
endif()

file(MAKE_DIRECTORY "${_root}/var/lib/dpkg/info" "${_root}/var/lib/dpkg/updates"
	"${_root}/var/lib/dpkg/triggers")
file(TOUCH "${_root}/var/lib/dpkg/status")
run("dpkg install" "${_dpkg}" "--root=${_root}" --force-not-root --force-depends
	--force-script-chrootless --log=/dev/null -i ${_debs})
run("dpkg list" "${_dpkg}" "--root=${_root}" -l)
message(STATUS "${run_output}")

# Nothing outside /usr, and the library where pkg-config and CMake look.
file(GLOB _top RELATIVE "${_root}" "${_root}/*")
list(REMOVE_ITEM _top usr var)
if(_top)
	message(FATAL_ERROR "the packages install outside /usr: ${_top}")
endif()
file(GLOB_RECURSE _pc RELATIVE "${_root}/usr" "${_root}/usr/*/weft.pc")
if(NOT _pc MATCHES "^(.*)/pkgconfig/weft\\.pc$")
	message(FATAL_ERROR "no weft.pc in the installed packages")
endif()
set(_libdir "${CMAKE_MATCH_1}")

# The consumers, against the root only.
set(ENV{PATH} "${_root}/usr/bin:$ENV{PATH}")
run("consumers" "${CMAKE_COMMAND}"
	"-DWEFT_BINARY_DIR=${WEFT_BINARY_DIR}/pkgtest"
	"-DWEFT_STAGE=${_root}/usr"
	-DWEFT_STAGE_READY=1
	"-DWEFT_LIBDIR=${_libdir}"
	"-DWEFT_CONSUMER_SOURCE=${WEFT_CONSUMER_SOURCE}"
	"-DWEFT_GENERATOR=${WEFT_GENERATOR}"
	"-DWEFT_C_COMPILER=${WEFT_C_COMPILER}"
	"-DWEFT_CXX_COMPILER=${WEFT_CXX_COMPILER}"
	"-DWEFT_C_FLAGS=${WEFT_C_FLAGS}"
	"-DWEFT_EXPECT_MPI=${WEFT_EXPECT_MPI}"
	-P "${CMAKE_CURRENT_LIST_DIR}/WeftInstallTest.cmake")

# The tools, from the root, and their man pages.
set(ENV{LD_LIBRARY_PATH} "${_root}/usr/${_libdir}")
foreach(_tool weft-sweep weft-trace-plot weft-probe)
	if(NOT EXISTS "${_root}/usr/bin/${_tool}")
		message(FATAL_ERROR "weft-tools did not install ${_tool}")
	endif()
	run("${_tool} --help" "${_root}/usr/bin/${_tool}" --help)
	if(NOT run_output MATCHES "usage: ${_tool}")
		message(FATAL_ERROR "${_tool} --help printed no usage line:\n${run_output}")
	endif()
	run("${_tool} --version" "${_root}/usr/bin/${_tool}" --version)
	if(NOT run_output MATCHES "^${_tool} \\(weft\\) [0-9]+\\.[0-9]+\\.[0-9]+\n$")
		message(FATAL_ERROR "${_tool} --version does not name the version:\n${run_output}")
	endif()
	if(WEFT_EXPECT_MAN)
		set(ENV{MANWIDTH} 80)
		run("man ${_tool}" man -M "${_root}/usr/share/man" -P cat ${_tool})
		string(TOUPPER "${_tool}" _upper)
		if(NOT run_output MATCHES "${_upper}\\(1\\)" OR NOT run_output MATCHES "SYNOPSIS|DESCRIPTION")
			message(FATAL_ERROR "man ${_tool} is not its page:\n${run_output}")
		endif()
	endif()
endforeach()

# The guides and the reference.
foreach(_doc README.md docs/tutorial.md docs/pitfalls.md docs/migrating.md docs/tuning.md
	     docs/faq.md docs/building.md html/index.html)
	if(NOT EXISTS "${_root}/usr/share/doc/weft/${_doc}")
		message(FATAL_ERROR "weft-doc did not install share/doc/weft/${_doc}")
	endif()
endforeach()
message(STATUS "install.packages: ok (${_debs})")
