package reports

import "gregor/checker"

// TxnCell is what a matrix cell shows of a txn-workload run: the
// anomalies that KIP-890 is about, and the transactions' outcomes.
type TxnCell struct {
	AbortedReads        int `json:"aborted_reads"`
	Torn                int `json:"torn"`
	LostCommittedWrites int `json:"lost_committed_writes"`
	Committed           int `json:"committed"`
	Aborted             int `json:"aborted"`
	Unknown             int `json:"unknown"`
}

// txnCell summarises res's transaction figures; nil without transactions.
func txnCell(res *checker.Result) *TxnCell {
	st := res.Stats
	if st.TxnCommitted+st.TxnAborted+st.TxnUnknown == 0 {
		return nil
	}
	return &TxnCell{AbortedReads: res.Counts[checker.AbortedRead], Torn: res.Counts[checker.TornTransaction],
		LostCommittedWrites: res.Counts[checker.LostCommittedWrite],
		Committed:           st.TxnCommitted, Aborted: st.TxnAborted, Unknown: st.TxnUnknown}
}

// add sums o into t (either may be nil).
func (t *TxnCell) add(o *TxnCell) *TxnCell {
	if o == nil {
		return t
	}
	if t == nil {
		c := *o
		return &c
	}
	t.AbortedReads += o.AbortedReads
	t.Torn += o.Torn
	t.LostCommittedWrites += o.LostCommittedWrites
	t.Committed += o.Committed
	t.Aborted += o.Aborted
	t.Unknown += o.Unknown
	return t
}
