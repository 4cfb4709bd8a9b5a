package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"gregor/runtime/external"
)

// interruptContext is signal.NotifyContext for SIGINT and SIGTERM, with a
// second signal honoured too (gregor run, matrix and shrink): the first
// ends ctx, and the command winds down within seconds (DESIGN.md section 8: its workload, heal and final reads
// are cut short, the history closed, the cluster torn down); a second,
// while that best-effort cleanup goes on, exits at once with 128 plus the
// signal's number (130 for Ctrl-C, 143 for SIGTERM). The history is
// written line by line, so what is on disk then is still readable by
// `gregor check`; brokers of the process runtime die with gregor
// (Pdeathsig), containers are left for `gregor clean`.
func interruptContext(parent context.Context, errOut io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			fmt.Fprintf(errOut, "gregor: %v: stopping (a second signal exits at once)\n", s)
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sig:
			fmt.Fprintf(errOut, "gregor: second %v: exiting now\n", s)
			external.KillCommands() // their contexts will not end them now
			simChildren.kill()
			code := 130
			if n, ok := s.(syscall.Signal); ok {
				code = 128 + int(n)
			}
			os.Exit(code)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel()
	}
}
