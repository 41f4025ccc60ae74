module weft/bench/io/go

go 1.21
