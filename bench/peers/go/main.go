// peers-go: the peer workloads (../peers.h) on Go's runtime, library "go":
// goroutines over GOMAXPROCS Ps (Go's default: one per CPU the process may
// use), standard library only. Options and CSV lines as every driver.
//
//	spawn-wait   the main goroutine starts N empty goroutines, each calling
//	             wg.Done on one sync.WaitGroup, then wg.Wait()
//	fib-tree     every call with n >= 2 starts two goroutines for fib(n-1)
//	             and fib(n-2) and waits for both on its own WaitGroup
//	spawn-join   inside a goroutine: start an empty goroutine, wait for it
//	             on a WaitGroup, N times
//	pingpong     two goroutines, two unbuffered channels. Go cannot pin a
//	             goroutine to a P: with GOMAXPROCS=2 the one a send wakes is
//	             usually run next on the sender's P (runnext), so this
//	             measures Go's hand-off, mostly on one P, not a wake-up
//	             across threads
//	mutex-tT     T goroutines, a sync.Mutex around every addition
//
// Not here: parallel-for, fiber-switch, fiber-create, ctx-switch and psort
// (no counterpart that would measure the same thing).
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

const prog = "peers-go"

type opts struct {
	rep                          int
	small                        bool
	only                         string
	spawnN, joinN, pingN, mutexN int64
	fibN                         int
}

func die(what string) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", prog, what)
	os.Exit(1)
}

// weftVersion is set by build-runtimes.sh (-ldflags -X) for --version.
var weftVersion = "unknown"

const usageText = "usage: %s [--rep R] [--small] [--sort-n N] [--fib-n N] [--only WORKLOAD]\n" +
	"       %s --help | --version\n"

func usage() {
	fmt.Fprintf(os.Stderr, usageText, prog, prog)
	os.Exit(2)
}

func count(opt string, args []string, i int) int64 {
	if i+1 >= len(args) {
		usage()
	}
	v, err := strconv.ParseInt(args[i+1], 10, 64)
	if err != nil || v < 1 {
		fmt.Fprintf(os.Stderr, "%s: %s needs a positive integer\n", prog, opt)
		os.Exit(2)
	}
	return v
}

// parse reads the options of peers.h's peers_parse, with the same sizes.
func parse(args []string) opts {
	o := opts{rep: 1}
	var fibN int64
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "--small":
			o.small = true
		case "--rep":
			o.rep = int(count(args[i], args, i))
			i++
		case "--sort-n": // psort is not here; accepted as by every driver
			count(args[i], args, i)
			i++
		case "--fib-n":
			fibN = count(args[i], args, i)
			if fibN > 40 {
				die("--fib-n is at most 40")
			}
			i++
		case "--only":
			if i+1 >= len(args) {
				usage()
			}
			o.only = args[i+1]
			i++
		case "-h", "--help":
			fmt.Printf(usageText, prog, prog)
			os.Exit(0)
		case "--version":
			fmt.Printf("%s (weft) %s\n", prog, weftVersion)
			os.Exit(0)
		default:
			fmt.Fprintf(os.Stderr, "%s: unknown option '%s'\n", prog, args[i])
			usage()
		}
	}
	pick := func(small, full int64) int64 {
		if o.small {
			return small
		}
		return full
	}
	o.spawnN = pick(2000, 500000)
	o.joinN = pick(2000, 200000)
	o.pingN = pick(2000, 100000)
	o.mutexN = pick(20000, 3000000)
	o.fibN = int(pick(15, 25))
	if fibN != 0 {
		o.fibN = int(fibN)
	}
	return o
}

func (o *opts) want(w string) bool { return o.only == "" || o.only == w }

func (o *opts) emit(workload string, n int64, d time.Duration) {
	fmt.Printf("%s,go,%d,%d,%.3f\n", workload, o.rep, n, float64(d.Nanoseconds())/float64(n))
}

func fibValue(n int) int64 {
	a, b := int64(0), int64(1)
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}

func spawnWait(o *opts) {
	// The WaitGroup is the count: Wait returns after exactly N Done calls
	// (one too many panics, one too few never returns).
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Add(int(o.spawnN))
	for i := int64(0); i < o.spawnN; i++ {
		go func() { wg.Done() }()
	}
	wg.Wait()
	o.emit("spawn-wait", o.spawnN, time.Since(t0))
}

func fibCall(n int) int64 {
	if n < 2 {
		return int64(n)
	}
	var a, b int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { a = fibCall(n - 1); wg.Done() }()
	go func() { b = fibCall(n - 2); wg.Done() }()
	wg.Wait()
	return a + b
}

func fibTree(o *opts) {
	var v int64
	done := make(chan struct{})
	t0 := time.Now()
	go func() { v = fibCall(o.fibN); close(done) }() // the root is a goroutine too
	<-done
	d := time.Since(t0)
	if v != fibValue(o.fibN) {
		die("fib-tree: wrong value")
	}
	o.emit("fib-tree", 2*fibValue(o.fibN+1)-1, d)
}

func spawnJoin(o *opts) {
	var ran int64
	var d time.Duration
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		t0 := time.Now()
		for i := int64(0); i < o.joinN; i++ {
			wg.Add(1)
			go func() { ran++; wg.Done() }() // ordered by the Wait below
			wg.Wait()
		}
		d = time.Since(t0)
		close(done)
	}()
	<-done
	if ran != o.joinN {
		die("spawn-join: wrong number of children")
	}
	o.emit("spawn-join", o.joinN, d)
}

func pingpong(o *opts) {
	there, back := make(chan int64), make(chan int64)
	var bad int64
	var d time.Duration
	done := make(chan struct{})
	go func() {
		for i := int64(0); i < o.pingN; i++ {
			back <- (<-there) + 1
		}
	}()
	go func() {
		t0 := time.Now()
		for i := int64(0); i < o.pingN; i++ {
			there <- i
			if <-back != i+1 {
				bad++
			}
		}
		d = time.Since(t0)
		close(done)
	}()
	<-done
	if bad != 0 {
		die("pingpong: wrong reply")
	}
	o.emit("pingpong", o.pingN, d)
}

func mutexRun(o *opts, threads int64, r []uint32) {
	var mu sync.Mutex
	var res uint32
	var wg sync.WaitGroup
	n := o.mutexN
	t0 := time.Now()
	wg.Add(int(threads))
	for t := int64(0); t < threads; t++ {
		go func(first int64) {
			for i := first; i < n; i += threads {
				mu.Lock()
				res += r[i] * r[i]
				mu.Unlock()
			}
			wg.Done()
		}(t)
	}
	wg.Wait()
	d := time.Since(t0)
	var want uint32
	for i := int64(0); i < n; i++ {
		want += uint32(i) * uint32(i)
	}
	if res != want {
		die("mutex: wrong sum")
	}
	o.emit(fmt.Sprintf("mutex-t%d", threads), n, d)
}

func main() {
	o := parse(os.Args)
	if o.want("spawn-wait") {
		spawnWait(&o)
	}
	r := make([]uint32, o.mutexN)
	for i := range r {
		r[i] = uint32(i)
	}
	for _, t := range []int64{2, 8} { // peers.h's PEERS_MUTEX_T1, _T2
		if o.want(fmt.Sprintf("mutex-t%d", t)) {
			mutexRun(&o, t, r)
		}
	}
	if o.want("fib-tree") {
		fibTree(&o)
	}
	if o.want("spawn-join") {
		spawnJoin(&o)
	}
	if o.want("pingpong") {
		pingpong(&o)
	}
}
