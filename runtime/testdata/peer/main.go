// Command peer is the stand-in broker of the runtimes' tests, so they
// do not depend on `gregor broker`. The image built from it answers the two
// commands the runtime uses: `broker` (here: a line server) and `nsfault`.
//
//	peer broker --id N --listen HOST:PORT --data DIR
//
// Each connection takes one command line and gets one answer line:
//
//	ping          -> pong N
//	dial ADDR     -> ok <ADDR's answer to ping> | err <reason>   (1 s bound)
//	write TEXT    -> ok        (appends TEXT to DIR/data)
//	read          -> the content of DIR/data on one line
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gregor/runtime/docker/nsfault"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peer broker|nsfault ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "nsfault":
		if err := nsfault.Main(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "nsfault:", err)
			os.Exit(1)
		}
	case "broker":
		broker(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		os.Exit(2)
	}
}

func broker(args []string) {
	fs := flag.NewFlagSet("broker", flag.ExitOnError)
	id := fs.Int("id", 0, "node id")
	listen := fs.String("listen", ":9092", "address")
	data := fs.String("data", "/data", "data dir")
	fs.Parse(args)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("peer %d up on %s\n", *id, *listen)
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go serve(c, *id, filepath.Join(*data, "data"))
	}
}

func serve(c net.Conn, id int, file string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	var out string
	switch cmd {
	case "ping":
		out = fmt.Sprintf("pong %d", id)
	case "dial":
		out = dial(arg)
	case "write":
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(arg)
			f.Close()
		}
		out = "ok"
		if err != nil {
			out = "err " + err.Error()
		}
	case "read":
		b, _ := os.ReadFile(file)
		out = string(b)
	default:
		out = "err unknown command"
	}
	fmt.Fprintln(c, out)
}

func dial(addr string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "err " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintln(c, "ping")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "err " + err.Error()
	}
	return "ok " + strings.TrimSpace(line)
}
