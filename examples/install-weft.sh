# From a weft checkout: build it, and install it under ~/weft.
cmake --preset release
cmake --build --preset release
cmake --install build/release --prefix "$HOME/weft"
