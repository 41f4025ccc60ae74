# Install rules: headers, libweft.a, libweft.so.0, weft.pc, the CMake
# package (weftConfig.cmake, weftConfigVersion.cmake, weftTargets.cmake) and,
# when Doxygen is found, the HTML API reference, so
# that consumers can use pkg-config or find_package(weft) -> weft::weft,
# weft::weft_static (cmake/WeftMPI.cmake adds weft::weft_mpi and weft-mpi.pc).
# Included from the root CMakeLists.txt.
#
# With WEFT_INSTALL_TEST, adds the ctest tests install.find_package (stage an
# install under <build>/stage, build cmake/consumer against it with
# find_package and with pkg-config, weft-mpi's too when it is built, run the
# results) and install.exports
# (libweft.so exports only weft_* symbols).
include(CMakePackageConfigHelpers)

set(WEFT_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/weft")
set(WEFT_PKGCONFIG_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/weft"
	DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
	COMPONENT Development
	FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

install(TARGETS weft_static weft_shared weft_cpp
	EXPORT weftTargets
	ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT Development
	LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT Runtime
		NAMELINK_COMPONENT Development
	RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT Runtime
	INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

install(EXPORT weftTargets
	NAMESPACE weft::
	FILE weftTargets.cmake
	DESTINATION "${WEFT_CMAKE_INSTALL_DIR}"
	COMPONENT Development)

configure_package_config_file(
	"${CMAKE_CURRENT_LIST_DIR}/weftConfig.cmake.in"
	"${PROJECT_BINARY_DIR}/weftConfig.cmake"
	INSTALL_DESTINATION "${WEFT_CMAKE_INSTALL_DIR}")
# 0.x: a minor release may break the API.
write_basic_package_version_file(
	"${PROJECT_BINARY_DIR}/weftConfigVersion.cmake"
	VERSION ${PROJECT_VERSION}
	COMPATIBILITY SameMinorVersion)
install(FILES
	"${PROJECT_BINARY_DIR}/weftConfig.cmake"
	"${PROJECT_BINARY_DIR}/weftConfigVersion.cmake"
	DESTINATION "${WEFT_CMAKE_INSTALL_DIR}"
	COMPONENT Development)

# weft.pc locates the prefix from its own directory (${pcfiledir}), so the
# same file is right wherever the tree is installed (cmake --install
# --prefix, DESTDIR, a moved tree). Absolute install dirs are used as given.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
	set(WEFT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
	set(WEFT_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
	set(WEFT_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
	file(RELATIVE_PATH _weft_pc_up "/prefix/${WEFT_PKGCONFIG_INSTALL_DIR}" "/prefix")
	string(REGEX REPLACE "/$" "" _weft_pc_up "${_weft_pc_up}")
	set(WEFT_PC_PREFIX "\${pcfiledir}/${_weft_pc_up}")
	set(WEFT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
	set(WEFT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/weft.pc.in" "${PROJECT_BINARY_DIR}/weft.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/weft.pc"
	DESTINATION "${WEFT_PKGCONFIG_INSTALL_DIR}"
	COMPONENT Development)
# The license (WEFT_LICENSE), with the documentation: share/doc/weft/LICENSE.
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" "${PROJECT_SOURCE_DIR}/CHANGELOG.md"
	DESTINATION "${CMAKE_INSTALL_DOCDIR}"
	COMPONENT Runtime)

# The HTML API reference, when Doxygen is found: built with the project
# (target weft_docs, from the same Doxyfile as `make docs`, into
# <build>/docs/html) and installed into share/doc/weft/html. Warnings do not
# fail the build here; `make docs-check` is where they do.
find_program(WEFT_DOXYGEN NAMES doxygen)
if(WEFT_DOXYGEN AND PROJECT_IS_TOP_LEVEL)
	file(GLOB _weft_public_headers CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/weft/*.h")
	set(_weft_docs_dir "${PROJECT_BINARY_DIR}/docs")
	file(WRITE "${PROJECT_BINARY_DIR}/Doxyfile.install"
		"@INCLUDE = ${PROJECT_SOURCE_DIR}/Doxyfile\n"
		"INPUT = ${PROJECT_SOURCE_DIR}/include/weft\n"
		"STRIP_FROM_PATH = ${PROJECT_SOURCE_DIR}/include\n"
		"OUTPUT_DIRECTORY = ${_weft_docs_dir}\n"
		"PROJECT_NUMBER = ${PROJECT_VERSION}\n"
		"WARN_AS_ERROR = NO\n"
		"WARNINGS = NO\n"
		"WARN_IF_UNDOCUMENTED = NO\n")
	add_custom_command(OUTPUT "${_weft_docs_dir}/html/index.html"
		COMMAND "${CMAKE_COMMAND}" -E rm -rf "${_weft_docs_dir}/html"
		COMMAND "${WEFT_DOXYGEN}" "${PROJECT_BINARY_DIR}/Doxyfile.install"
		DEPENDS ${_weft_public_headers} "${PROJECT_SOURCE_DIR}/Doxyfile"
		WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
		COMMENT "API reference (Doxygen): ${_weft_docs_dir}/html/index.html"
		VERBATIM)
	add_custom_target(weft_docs ALL DEPENDS "${_weft_docs_dir}/html/index.html")
	install(DIRECTORY "${_weft_docs_dir}/html/"
		DESTINATION "${CMAKE_INSTALL_DOCDIR}/html"
		COMPONENT Documentation)
	set(WEFT_DOCS_HTML "${CMAKE_INSTALL_DOCDIR}/html/index.html")
else()
	set(WEFT_DOCS_HTML "")
endif()

if(WEFT_INSTALL_TEST)
	enable_testing()
	add_test(NAME install.find_package
		COMMAND "${CMAKE_COMMAND}"
			"-DWEFT_BINARY_DIR=${PROJECT_BINARY_DIR}"
			"-DWEFT_STAGE=${PROJECT_BINARY_DIR}/stage"
			"-DWEFT_LIBDIR=${CMAKE_INSTALL_LIBDIR}"
			"-DWEFT_CONSUMER_SOURCE=${CMAKE_CURRENT_LIST_DIR}/consumer"
			"-DWEFT_GENERATOR=${CMAKE_GENERATOR}"
			"-DWEFT_C_COMPILER=${CMAKE_C_COMPILER}"
			"-DWEFT_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
			"-DWEFT_C_FLAGS=${WEFT_SANITIZE_FLAGS}"
			"-DWEFT_EXPECT_MPI=$<TARGET_EXISTS:weft_mpi>"
			"-DWEFT_DOCS_HTML=${WEFT_DOCS_HTML}"
			-P "${CMAKE_CURRENT_LIST_DIR}/WeftInstallTest.cmake")
	# Both tests write <build>/stage; never run them at the same time.
	set_tests_properties(install.find_package PROPERTIES
		TIMEOUT 300
		LABELS install
		RESOURCE_LOCK weft_stage)

	add_test(NAME install.exports
		COMMAND "${CMAKE_COMMAND}"
			"-DWEFT_LIBRARY=$<TARGET_FILE:weft_shared>"
			"-DWEFT_NM=${CMAKE_NM}"
			-P "${CMAKE_CURRENT_LIST_DIR}/WeftCheckExports.cmake")
	set_tests_properties(install.exports PROPERTIES TIMEOUT 60 LABELS install)
endif()

