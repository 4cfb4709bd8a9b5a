package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gregor/runtime"
	"gregor/runtime/docker"
	"gregor/runtime/process"
)

// pickRuntime resolves --runtime: "docker", "process", or "auto" (docker
// when an engine answers, else process). It says which it picked and why.
func pickRuntime(ctx context.Context, name string, log io.Writer) (runtime.Runtime, error) {
	switch name {
	case "process":
		return process.Runtime{}, nil
	case "docker":
		r := docker.New(docker.Options{Log: log})
		if err := r.Available(ctx); err != nil {
			return nil, err
		}
		return r, nil
	case "", "auto":
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		r := docker.New(docker.Options{Log: log})
		if err := r.Available(ctx); err != nil {
			fmt.Fprintf(log, "runtime: process (no Docker engine: %v)\n", err)
			return process.Runtime{}, nil
		}
		fmt.Fprintln(log, "runtime: docker")
		return r, nil
	}
	return nil, fmt.Errorf("unknown runtime %q: choose docker, process or auto", name)
}

// selfBinary is the static gregor binary runtimes start brokers from: this
// executable when it is static (make build), else the one `make build` left.
func selfBinary() (string, error) {
	if p := os.Getenv("GREGOR_BINARY"); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if abs, err := filepath.EvalSymlinks(exe); err == nil {
		exe = abs
	}
	return exe, nil
}
