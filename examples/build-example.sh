# Compile hello.c against the weft installed under ~/weft. The rpath lets
# the program find libweft.so.0 there without LD_LIBRARY_PATH.
export PKG_CONFIG_PATH="$HOME/weft/lib/pkgconfig"
cc -std=c11 -Wall -Wextra -O2 -o hello hello.c $(pkg-config --cflags --libs weft) \
	-Wl,-rpath,"$(pkg-config --variable=libdir weft)"
./hello
