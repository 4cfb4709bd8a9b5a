package main

import (
	"github.com/spf13/pflag"

	"gregor/harness"
)

// registerTxn binds `gregor run`'s txn workload flags (--workload txn).
func registerTxn(fl *pflag.FlagSet, cfg *harness.Config, def harness.Config) {
	fl.Float64Var(&cfg.AbortRate, "abort-rate", def.AbortRate, "txn: share of transactions aborted on purpose (0..0.9)")
	fl.DurationVar(&cfg.TxnThink, "txn-think", def.TxnThink, "txn: pause between a transaction's micro-ops (an application processing between sends; keeps transactions open)")
}
