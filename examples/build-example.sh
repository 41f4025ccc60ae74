# Compile hello.c against the weft installed under ~/weft (its libraries
# are in ~/weft/lib, or ~/weft/lib64 on some systems). The rpath lets the
# program find libweft.so.0 there without LD_LIBRARY_PATH.
export PKG_CONFIG_PATH="$HOME/weft/lib/pkgconfig:$HOME/weft/lib64/pkgconfig"
cc -std=c11 -Wall -Wextra -O2 -o hello hello.c $(pkg-config --cflags --libs weft) \
	-Wl,-rpath,"$(pkg-config --variable=libdir weft)"
./hello
