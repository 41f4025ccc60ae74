module weft/bench/go-rwlock

go 1.21
