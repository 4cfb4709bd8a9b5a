package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gregor/history"
)

// effectTests names, for every nemesis kind, the test that shows the fault
// does what its name says (a killed leader loses its leadership, a power
// cut loses the unsynced tail, an isolated leader cannot commit ...), as
// "dir.TestName" or "dir.TestName/subtest". A matrix column is only as true
// as its faults: a kind added without an effect test fails
// TestEveryNemesisKindHasAnEffectTest.
var effectTests = map[string]string{
	history.NemesisKill:               "harness.TestNemesisEffects/kill-leader",
	history.NemesisStop:               "harness.TestNemesisEffects/stop-leader",
	history.NemesisPause:              "harness.TestNemesisEffects/pause-leader",
	history.NemesisPartition:          "harness.TestNemesisEffects/isolate-leader",
	history.NemesisSlow:               "harness.TestNemesisEffects/slow-follower",
	history.NemesisPowerLoss:          "harness.TestPowerLossAllEffect",
	history.NemesisClientCrash:        "harness.TestClientCrash",
	history.NemesisConsumerRestart:    "harness.TestGroupRollingRestartCooperativeStatic",
	history.NemesisConsumerJoin:       "harness.TestGroupExperimentBJoin",
	history.NemesisStrandLeader:       "harness.TestScenarioStrandLeader",
	history.NemesisKIP101:             "harness.TestScenarioKIP101",
	history.NemesisReassign:           "harness.TestReassignAcksAllMinISR2LosesNothing",
	history.NemesisKillTxnCoordinator: "harness.TestKillTxnCoordinatorEffect",
	history.NemesisPauseProducer:      "harness.TestPauseProducerEffect",
	history.NemesisClientReset:        "harness.TestLinkFaultEffects/client-reset",
	history.NemesisLoseResponses:      "harness.TestLinkFaultEffects/lose-responses",
	history.NemesisDelayClient:        "harness.TestLinkFaultEffects/delay-client",
	history.NemesisRestartStorm:       "harness.TestRestartStormEffect",
	history.NemesisFaultPoints:        "harness.TestFaultPointCrashAfterISRExpansion",
	history.NemesisDiskFault:          "runtime/sim.TestSimDiskFaultEffects",
	history.NemesisClockSkew:          "runtime/sim.TestSimClockSkewShiftsLogAppendTime",
	history.NemesisPauseShareConsumer: "cmd/gregor.TestRunRuntimeSimPauseShareConsumer",
}

// TestEveryNemesisKindHasAnEffectTest: every kind history.NemesisKinds
// lists has an entry in effectTests, and every entry names a test that
// exists: a Test function in that directory's _test.go files, with the
// subtest's name as a string literal in the same file.
func TestEveryNemesisKindHasAnEffectTest(t *testing.T) {
	for _, k := range history.NemesisKinds {
		if _, ok := effectTests[k.Name]; !ok {
			t.Errorf("nemesis kind %q has no effect test: add one and name it in effectTests (cmd/gregor/effects_test.go)", k.Name)
		}
	}
	for kind, name := range effectTests {
		if history.NemesisClasses(kind) == 0 {
			t.Errorf("effectTests names %q, not a nemesis kind", kind)
		}
		dir, test, ok := strings.Cut(name, ".")
		if !ok {
			t.Errorf("%s: %q is not dir.TestName[/subtest]", kind, name)
			continue
		}
		fn, sub, _ := strings.Cut(test, "/")
		if err := testExists(filepath.Join("..", "..", dir), fn, sub); err != nil {
			t.Errorf("%s: effect test %s: %v", kind, name, err)
		}
	}
}

// testExists looks for func fn(t *testing.T) in dir's test files and, if sub
// is given, the literal "sub" in the same file.
func testExists(dir, fn, sub string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		return os.ErrNotExist
	}
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		found, hasSub := false, sub == ""
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				found = found || n.Name.Name == fn
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && s == sub {
					hasSub = true
				}
			}
			return true
		})
		if found && hasSub {
			return nil
		}
		if found {
			return &missingSubtest{sub}
		}
	}
	return os.ErrNotExist
}

type missingSubtest struct{ name string }

func (m *missingSubtest) Error() string {
	return "no subtest " + strconv.Quote(m.name) + " in its file"
}
