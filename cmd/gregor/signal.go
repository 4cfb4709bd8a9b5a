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
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case s := <-sig:
			fmt.Fprintf(errOut, "gregor: %v: stopping (a second signal exits at once)\n", s)
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sig:
			exitNow(errOut, s)
		case <-done:
			// A second signal that came before the stop's signal.Stop
			// is in sig though done won the select: it still exits at
			// once, or the run's own exit would race it.
			select {
			case s := <-sig:
				exitNow(errOut, s)
			default:
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sig) // from here a signal has its default action: death by it
		close(done)
		<-finished
		cancel()
	}
}

// exitNow is the second signal: the commands and simulators gregor
// started are killed, and gregor exits as a shell reports death by s.
func exitNow(errOut io.Writer, s os.Signal) {
	fmt.Fprintf(errOut, "gregor: second %v: exiting now\n", s)
	external.KillCommands() // their contexts will not end them now
	simChildren.kill()
	code := 130
	if n, ok := s.(syscall.Signal); ok {
		code = 128 + int(n)
	}
	os.Exit(code)
}
