module weft/bench/peers/go

go 1.21
