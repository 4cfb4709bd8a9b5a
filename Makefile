# gregor: build, test, conformance, check (configuration matrix), validate, bench.
# Every target works on a fresh clone with Go on PATH and (for image/docker tests) a Docker engine.
GO      ?= go
BIN     := bin/gregor
PKGS    := ./...
# make test must stay well under 15 minutes on 2 cores; the timeout is a bound, not a target.
TEST_TIMEOUT ?= 14m

export CGO_ENABLED ?= 0
export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: build test test-short conformance check validate bench vet fmt clean

# bin/gregor-sim is the simulator (--runtime sim): cmd/gregor's test binary
# with -tags synctests (testing/synctest needs a *testing.T, and franz-go's
# locks must be channels in a bubble); gregor run execs it.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/gregor
	CGO_ENABLED=0 $(GO) test -c -trimpath -tags synctests -o $(BIN)-sim ./cmd/gregor

vet:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	 if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# -race needs cgo; the race detector is worth it for a concurrent broker.
# Parallel tests (t.Parallel) are in-process cluster scenarios that mostly
# wait on failure detection, not on the CPU: 4 at a time, not GOMAXPROCS.
TEST_PARALLEL ?= 4
# The simulation (runtime/sim) runs clients and brokers in one
# testing/synctest bubble: franz-go must be built with -tags synctests.
test: vet
	CGO_ENABLED=1 $(GO) test -race -parallel $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) $(PKGS)
	CGO_ENABLED=1 $(GO) test -race -tags synctests -timeout 5m ./runtime/sim/...

# make conformance: franz-go's own pkg/kgo integration suite (the version
# go.mod pins) against a 3-broker gregor up cluster, RF 3, torn down after;
# prints pass/fail/skip counts and each skip (README "Conformance").
conformance:
	./.ci/conformance

test-short:
	$(GO) test -short -timeout $(TEST_TIMEOUT) $(PKGS)

# make check: the main job. The curated configuration matrix (acks 0/1/all,
# min ISR 1/2, unclean on/off under leader kill, leader isolation, pause,
# whole-cluster power loss without and with fsync, a stranded leader,
# client-link faults, KIP-101's story): each cell with 30 seeds on the
# simulation and one on the process runtime beside it (the file's
# runtimes:), the process runtime's cells CHECK_J at a time and the sim's
# CHECK_SIM_J at a time beside them (niced: on virtual time, a CPU it waits
# for changes nothing it measures); fails only on a forbidden anomaly or a
# crashed cell, and prints where the report is.
CHECK_J ?= 4
CHECK_SIM_J ?= 2
check: build
	./$(BIN) matrix -j $(CHECK_J) --lane sim=$(CHECK_SIM_J) --config matrix/default.yaml --out store/matrix-default

# make validate: the harness measures itself: each of the 8 planted bugs'
# detection rate under the fault most likely to expose it (10 runs each),
# each distinct probe setting's control (7 x 10 runs without the bug), and 70
# more false-alarm runs spread over the 26 (workload, nemesis) pairs of the
# queue, group and txn workloads: 140 runs that must not fail, 220 in all.
# Process runtime, 4 runs at a time (a run uses about a third of a core).
validate: build
	./$(BIN) validate --runtime process -j 4 --runs 10 --safe-runs 70 --out store/validate

bench: build
	./$(BIN) bench

clean:
	rm -rf bin
