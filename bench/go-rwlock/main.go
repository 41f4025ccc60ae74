// go-rwlock: bench/rwlock_contention's workload with Go's sync.RWMutex, to
// run next to it: T goroutines (GOMAXPROCS = the CPUs) each do N
// operations, a read with probability 1 - W/100 (a shared lock around
// summing an 8-word table, checking its words are equal), else a write
// (every word bumped). Prints ns per operation, the median of R runs.
//
//	go run . [-ops N] [-threads 2,8] [-reps R] [-writes W]
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const words = 8

func run(threads, ops, writePct int) float64 {
	var mu sync.RWMutex
	var table [words]int64
	var torn int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			x := seed
			local := int64(0)
			<-start
			for i := 0; i < ops; i++ {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				if int(x%100) < writePct {
					mu.Lock()
					for k := range table {
						table[k]++
					}
					mu.Unlock()
				} else {
					mu.RLock()
					first := table[0]
					for k := 1; k < words; k++ {
						if table[k] != first {
							local++
						}
					}
					mu.RUnlock()
				}
			}
			if local != 0 {
				mu.Lock()
				torn += local
				mu.Unlock()
			}
		}(0x9e3779b97f4a7c15 * uint64(t+1))
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	d := time.Since(t0)
	if torn != 0 {
		fmt.Fprintln(os.Stderr, "go-rwlock: a writer beside a reader")
		os.Exit(1)
	}
	return float64(d.Nanoseconds()) / float64(threads*ops)
}

func main() {
	ops := flag.Int("ops", 400000, "operations per goroutine")
	threadList := flag.String("threads", "2,8", "goroutine counts")
	reps := flag.Int("reps", 5, "repetitions (median)")
	writes := flag.Int("writes", 10, "percent of writes")
	flag.Parse()
	fmt.Printf("go sync.RWMutex, %d%% writes, GOMAXPROCS %d\n", *writes, runtimeProcs())
	for _, s := range strings.Split(*threadList, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "go-rwlock: bad -threads")
			os.Exit(2)
		}
		v := make([]float64, *reps)
		for r := range v {
			v[r] = run(n, *ops, *writes)
		}
		sort.Float64s(v)
		fmt.Printf("%-8d %-8s %12.1f\n", n, "go", v[len(v)/2])
	}
}
