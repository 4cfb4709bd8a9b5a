package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With transaction version 2 (KIP-890 part 2) partitions join a
// transaction on produce, so a client whose produces all failed cannot tell
// whether one registered a partition: franz-go's EndTransaction (like
// Kafka's TransactionManager) then aborts, whatever the caller asked.
// Kafka's TransactionCoordinator.endTransaction takes that abort with
// nothing open, in Empty, CompleteCommit and CompleteAbort at the current
// epoch, and bumps the epoch (TransactionMetadata.prepareAbortOrCommit with
// noPartitionAdded). franz-go's TestTxnEtl hits it when a
// GroupTransactSession's buffered produces are aborted by a rebalance: the
// end of that session's transaction was answered INVALID_TXN_STATE, the
// client could not recover, and the suite failed.
func TestTxnAbortWithNothingOpen(t *testing.T) {
	tc := txnCluster(t, 3, 2, func(c *Config) { c.AutoCreateTopics = false })
	tc.createTopic("out", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("raw", func(t *testing.T) {
		cl := tc.client()
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID = kmsg.StringPtr("raw")
		init.TransactionTimeoutMillis = 10000
		var pid int64
		var epoch int16
		tc.waitFor("InitProducerId", 15*time.Second, func() error {
			resp, err := init.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			pid, epoch = resp.ProducerID, resp.ProducerEpoch
			return kerr.ErrorForCode(resp.ErrorCode)
		})
		end := func(epoch int16, commit bool) (int16, error) {
			t.Helper()
			req := kmsg.NewPtrEndTxnRequest()
			req.Version = 5
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "raw", pid, epoch, commit
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetVersion() < 5 {
				t.Fatalf("EndTxn answered at v%d, want v5 (transaction version 2)", resp.GetVersion())
			}
			return resp.ProducerEpoch, kerr.ErrorForCode(resp.ErrorCode)
		}
		steps := []struct {
			what   string
			epoch  int16
			commit bool
			want   error
			epochd int16 // the answer's epoch, as an offset from the first
		}{
			{"an abort in Empty (nothing ever open)", epoch, false, nil, 1},
			{"the retry of that abort", epoch, false, nil, 1},
			{"a commit with nothing open (CompleteAbort, the current epoch)", epoch + 1, true, kerr.InvalidTxnState, -1},
			{"an abort with nothing open after an abort (CompleteAbort, the current epoch)", epoch + 1, false, nil, 2},
			{"an abort at an older epoch", epoch, false, kerr.ProducerFenced, -1},
		}
		for _, s := range steps {
			var got int16
			var err error
			// CONCURRENT_TRANSACTIONS while the previous end completes.
			tc.waitFor(s.what, 10*time.Second, func() error {
				got, err = end(s.epoch, s.commit)
				if errors.Is(err, kerr.ConcurrentTransactions) {
					return err
				}
				return nil
			})
			if !errors.Is(err, s.want) && !(s.want == nil && err == nil) {
				t.Fatalf("%s: %v, want %v", s.what, err, s.want)
			}
			if s.want == nil && got != epoch+s.epochd {
				t.Fatalf("%s: answered epoch %d, want %d", s.what, got, epoch+s.epochd)
			}
		}
	})

	t.Run("franz-go", func(t *testing.T) {
		cl := tc.txnProducer("kgo", kgo.UnknownTopicRetries(0))
		if err := produceTxn(ctx, cl, "out", 1, true, "first"); err != nil {
			t.Fatal(err)
		}
		// A transaction whose only produce fails before any partition
		// joins; franz-go ends it with an abort (CompleteCommit, the
		// current epoch).
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "no-such-topic", Value: []byte("lost")}).FirstErr(); err == nil {
			t.Fatal("produce to a topic that does not exist succeeded")
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("ending a transaction whose produces all failed: %v (Kafka takes the abort franz-go sends)", err)
		}
		if err := produceTxn(ctx, cl, "out", 1, true, "second"); err != nil {
			t.Fatalf("the next transaction: %v", err)
		}
		tc.sentinels(cl, "out", 1, "end")
		got := tc.readUntil("out", 1, true, "end")
		if len(got) != 2 || got[0] != "first" || got[1] != "second" {
			t.Fatalf("read_committed read %v, want [first second]", got)
		}
	})
}
