package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"gregor/runtime"
	"gregor/runtime/docker"
	"gregor/runtime/external"
	"gregor/runtime/image"
	"gregor/runtime/process"
)

// targetFlags are gregor run's flags that pick what is tested: --runtime,
// and for a cluster gregor does not boot from its own flags, --bootstrap
// and --faults (external) or --image-spec (image).
type targetFlags struct {
	Runtime   string
	Bootstrap []string
	Faults    string
	ImageSpec string
}

// registerTarget binds --runtime (with external and image) and their
// settings.
func registerTarget(fl *pflag.FlagSet, t *targetFlags) {
	fl.StringVar(&t.Runtime, "runtime", "auto", "docker | process | auto (docker when an engine answers) | external (a running cluster: --bootstrap, --faults) | image (any Kafka-protocol image: --image-spec) | sim (every broker and client in one process on virtual time: bin/gregor-sim, built by make build)")
	fl.StringSliceVar(&t.Bootstrap, "bootstrap", nil, "--runtime external: the cluster's Kafka listeners, HOST:PORT,...")
	fl.StringVar(&t.Faults, "faults", "", "--runtime external: YAML file of fault commands per node (kill, start, stop, pause, resume, isolate, heal, slow, unslow)")
	fl.StringVar(&t.ImageSpec, "image-spec", "", "--runtime image: YAML node template for a Kafka-protocol container image")
}

// pickTarget resolves the target flags to a runtime; a setting given for
// another runtime is refused, naming it.
func pickTarget(ctx context.Context, t targetFlags, log io.Writer) (runtime.Runtime, error) {
	if t.Runtime != "external" && (len(t.Bootstrap) > 0 || t.Faults != "") {
		return nil, fmt.Errorf("--bootstrap and --faults are for --runtime external (got --runtime %s)", t.Runtime)
	}
	if t.Runtime != "image" && t.ImageSpec != "" {
		return nil, fmt.Errorf("--image-spec is for --runtime image (got --runtime %s)", t.Runtime)
	}
	switch t.Runtime {
	case "external":
		o := external.Options{Bootstrap: t.Bootstrap}
		if t.Faults != "" {
			f, err := external.LoadFaults(t.Faults)
			if err != nil {
				return nil, err
			}
			o.Faults = f
		}
		return external.New(o)
	case "image":
		return pickImage(ctx, t.ImageSpec, log)
	}
	return pickRuntime(ctx, t.Runtime, log)
}

// pickRuntime resolves --runtime: "docker", "process", or "auto" (docker
// when an engine answers, else process). It says which it picked and why.
func pickRuntime(ctx context.Context, name string, log io.Writer) (runtime.Runtime, error) {
	switch name {
	case "process":
		return process.Runtime{}, nil
	case "sim":
		if simChild == nil {
			return nil, fmt.Errorf("--runtime sim runs in bin/gregor-sim (gregor run and gregor matrix start it)")
		}
		return simChild.rt, nil
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
	return nil, fmt.Errorf("unknown runtime %q: choose docker, process, auto, external, image or sim", name)
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

// pickImage is --runtime image (runtime/image).
func pickImage(ctx context.Context, spec string, log io.Writer) (runtime.Runtime, error) {
	if spec == "" {
		return nil, fmt.Errorf("--runtime image needs --image-spec FILE: a YAML node template (runtime/image/specs/ has gregor, apache/kafka and redpanda)")
	}
	s, err := image.Load(spec)
	if err != nil {
		return nil, err
	}
	r := image.New(s, log)
	if err := r.Available(ctx); err != nil {
		return nil, err
	}
	return r, nil
}
