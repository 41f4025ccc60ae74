// echo-go: the Go peer of bench/io. An echo server with a goroutine per
// connection, as a Go programmer writes one (net.Listen, Accept, a loop of
// Read and Write on net.Conn; Go sets TCP_NODELAY by default). GOMAXPROCS
// comes from the environment (run.sh sets 1 and 2). Listens on 127.0.0.1
// only; runs until killed. Built by bench/io/run.sh, never by CMake.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
)

var weftVersion = "unknown" // set by run.sh: -ldflags "-X main.weftVersion=..."

func serve(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: echo-go --port N\n"+
			"An echo server with a goroutine per connection on 127.0.0.1:N (bench/io), until killed.\n")
	}
	port := flag.Int("port", 0, "port on 127.0.0.1")
	version := flag.Bool("version", false, "print the version")
	help := flag.Bool("help", false, "print the usage")
	flag.Parse()
	if *help {
		flag.CommandLine.SetOutput(os.Stdout)
		flag.Usage()
		return
	}
	if *version {
		fmt.Printf("echo-go (weft) %s\n", weftVersion)
		return
	}
	if *port <= 0 || *port > 65535 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo-go: %v\n", err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "echo-go: accept: %v\n", err)
			continue
		}
		go serve(c)
	}
}
