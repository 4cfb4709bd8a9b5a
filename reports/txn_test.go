package reports

import (
	"image/color"
	"os"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/checker/checkertest"
	"gregor/history"
)

// The run report of a txn history draws each transaction's span by
// producer, coloured by outcome, with its micro-ops in the title, in
// headless chromium; an error string from the cluster cannot inject markup.
func TestRunReportDrawsTransactions(t *testing.T) {
	ops := checkertest.GenerateTxn(checkertest.TxnGenOptions{Seed: 5, Ops: 1500, Keys: 4, Producers: 2, Consumers: 1, AbortRate: 0.3, InfoRate: 0.05, MaxMops: 3})
	for i := range ops {
		if ops[i].F == history.FTxn && ops[i].Type == history.Info {
			ops[i].Error = hostile
		}
	}
	cfg := &history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, Workload: history.WorkloadTxn, TransactionVersion: 2}
	path, res := writeRunReport(t, ops, cfg)
	st := res.Stats
	if res.Valid != checker.ValidTrue || st.TxnCommitted == 0 || st.TxnAborted == 0 || st.TxnUnknown == 0 {
		t.Fatalf("generated txn history: valid %v stats %+v", res.Valid, st)
	}
	dom, shot := render(t, path)
	mustContain(t, dom, `id="transactions"`, "process 0 committed: send t/0", "aborted")
	for class, want := range map[string]int{"ok": st.TxnCommitted, "fail": st.TxnAborted, "info": st.TxnUnknown} {
		if got := count(dom, `<rect class="txn `+class+`"`); got != want {
			t.Errorf("%d transactions drawn %s, the history has %d", got, class, want)
		}
	}
	if strings.Contains(dom, "<script") || strings.Contains(dom, "<img") {
		t.Fatal("markup from the history was injected into the page")
	}
	// Aborted transactions are red bars: the screenshot has red pixels.
	if n := colours(shot, color.RGBA{0xd9, 0x53, 0x4f, 0xff}); n < 50 {
		t.Fatalf("screenshot has %d red pixels: aborted transactions not drawn", n)
	}
	// A queue history has no transactions section.
	qops, qcfg := generated()
	qpath, _ := writeRunReport(t, qops, qcfg)
	if b, err := os.ReadFile(qpath); err != nil || strings.Contains(string(b), `id="transactions"`) {
		t.Error("a queue run's report has a transactions section")
	}
}
