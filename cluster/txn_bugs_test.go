package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bugPair runs f against a correct cluster and one with the planted bug,
// in both transaction versions.
func bugPair(t *testing.T, bug string, f func(t *testing.T, tv int16, planted bool, plant func(*Config))) {
	txnVersions(t, func(t *testing.T, tv int16) {
		for _, planted := range []bool{false, true} {
			t.Run(fmt.Sprintf("bug=%v", planted), func(t *testing.T) {
				t.Parallel()
				f(t, tv, planted, func(c *Config) {
					if planted {
						if err := PlantBugs(c, []string{bug}); err != nil {
							t.Fatal(err)
						}
					}
				})
			})
		}
	})
}

// lso-past-open-txn: an open transaction's record is below the HW; a
// correct leader keeps the LSO at it, so read_committed stops there; the
// bug answers read_committed up to the HW, open record included.
func TestPlantedLSOPastOpenTxn(t *testing.T) {
	bugPair(t, "lso-past-open-txn", func(t *testing.T, tv int16, planted bool, plant func(*Config)) {
		tc := txnCluster(t, 3, tv, plant)
		tc.createTopic("lso", 1, 3, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl := tc.txnProducer("lso")
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: "lso", Value: []byte("open")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		tc.sentinels(nil, "lso", 1, "after")
		lso, hw := tc.listOffset("lso", 0, true), tc.listOffset("lso", 0, false)
		switch {
		case !planted && lso != r.Offset:
			t.Fatalf("correct leader: LSO %d (HW %d), want %d, the open transaction's first offset", lso, hw, r.Offset)
		case planted && lso != hw:
			t.Fatalf("planted lso-past-open-txn: LSO %d, want the HW %d", lso, hw)
		}
		if planted {
			if got := tc.readUntil("lso", 1, true, "after"); !slices.Equal(got, []string{"open"}) {
				t.Fatalf("planted: read_committed saw %v, want the open record", got)
			}
		}
	})
}

// no-zombie-fencing: a new producer for the transactional id fences the
// old one; a correct leader refuses the zombie's next batch
// (INVALID_PRODUCER_EPOCH), the bug stores it.
func TestPlantedNoZombieFencing(t *testing.T) {
	bugPair(t, "no-zombie-fencing", func(t *testing.T, tv int16, planted bool, plant func(*Config)) {
		tc := txnCluster(t, 3, tv, plant)
		tc.createTopic("zombie", 1, 3, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		old := tc.txnProducer("z", kgo.RecordDeliveryTimeout(5*time.Second))
		if err := old.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := old.ProduceSync(ctx, &kgo.Record{Topic: "zombie", Value: []byte("before")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		fresh := tc.txnProducer("z")
		if err := fresh.BeginTransaction(); err != nil { // InitProducerId: fences old, aborts its transaction
			t.Fatal(err)
		}
		tc.waitTxnState("the old producer's transaction aborted", "z", "Empty", 15*time.Second, nil)
		err := old.ProduceSync(ctx, &kgo.Record{Topic: "zombie", Value: []byte("zombie")}).FirstErr()
		switch {
		case !planted && !errors.Is(err, kerr.InvalidProducerEpoch):
			t.Fatalf("correct leader: the zombie's produce: %v, want INVALID_PRODUCER_EPOCH", err)
		case planted && err != nil:
			t.Fatalf("planted no-zombie-fencing: the zombie's produce refused: %v", err)
		}
		tc.sentinels(nil, "zombie", 1, "end")
		got := tc.readUntil("zombie", 1, false, "end")
		if stored := slices.Contains(got, "zombie"); stored != planted {
			t.Fatalf("zombie record stored: %v (log %v), want %v", stored, got, planted)
		}
	})
}

// txn-offsets-early: a transaction's offset commit must reach the group
// only with its COMMIT marker; the bug shows it at once (and keeps it after
// the transaction aborts).
func TestPlantedTxnOffsetsEarly(t *testing.T) {
	bugPair(t, "txn-offsets-early", func(t *testing.T, tv int16, planted bool, plant func(*Config)) {
		tc := txnCluster(t, 3, tv, plant)
		tc.createTopic("src", 1, 3, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl := tc.client()
		// The group's coordinator exists once __consumer_offsets does.
		tc.waitFor("group coordinator", 15*time.Second, func() error {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey = "early"
			resp, err := req.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			return err
		})
		init := kmsg.NewPtrInitProducerIDRequest()
		id := "early-txn"
		init.TransactionalID, init.TransactionTimeoutMillis = &id, 30000
		var pid int64
		var epoch int16
		tc.waitFor("producer id", 15*time.Second, func() error {
			resp, err := init.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			if err == nil {
				pid, epoch = resp.ProducerID, resp.ProducerEpoch
			}
			return err
		})
		if tv == 1 {
			add := kmsg.NewPtrAddOffsetsToTxnRequest()
			add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, pid, epoch, "early"
			resp, err := add.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			if err != nil {
				t.Fatalf("AddOffsetsToTxn: %v", err)
			}
		}
		commit := kmsg.NewPtrTxnOffsetCommitRequest()
		commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch, commit.Generation = id, "early", pid, epoch, -1
		ct := kmsg.NewTxnOffsetCommitRequestTopic()
		ct.Topic = "src"
		cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.LeaderEpoch = 0, 42, -1
		ct.Partitions = append(ct.Partitions, cp)
		commit.Topics = append(commit.Topics, ct)
		cresp, err := commit.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(cresp.Topics[0].Partitions[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("TxnOffsetCommit: %v", err)
		}
		fetched := func(stable bool) (int64, error) {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group, req.RequireStable = "early", stable
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = "src", []int32{0}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return 0, err
			}
			if len(resp.Groups) > 0 {
				g := resp.Groups[0]
				p := g.Topics[0].Partitions[0]
				return p.Offset, kerr.ErrorForCode(p.ErrorCode)
			}
			p := resp.Topics[0].Partitions[0]
			return p.Offset, kerr.ErrorForCode(p.ErrorCode)
		}
		off, err := fetched(false)
		switch {
		case err != nil:
			t.Fatal(err)
		case !planted && off != -1:
			t.Fatalf("correct coordinator: offset %d visible before the commit, want -1", off)
		case planted && off != 42:
			t.Fatalf("planted txn-offsets-early: offset %d, want 42 at once", off)
		}
		if !planted {
			if _, err := fetched(true); !errors.Is(err, kerr.UnstableOffsetCommit) {
				t.Fatalf("RequireStable fetch during the transaction: %v, want UNSTABLE_OFFSET_COMMIT", err)
			}
		}
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, false
		eresp, err := end.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(eresp.ErrorCode)
		}
		if err != nil {
			t.Fatalf("EndTxn abort: %v", err)
		}
		tc.waitTxnState("the abort completed", id, "CompleteAbort", 15*time.Second, nil)
		off, err = fetched(true)
		switch {
		case err != nil:
			t.Fatalf("stable fetch after the abort: %v", err)
		case !planted && off != -1:
			t.Fatalf("correct coordinator: the aborted transaction's offset %d is visible", off)
		case planted && off != 42:
			t.Fatalf("planted: offset %d after the abort, want 42 still", off)
		}
	})
}

// marker-before-prepare: the coordinator's followers cannot replicate, so
// PrepareCommit never becomes durable. A correct coordinator writes no
// marker; the bug writes COMMIT at once. The coordinator then dies: the new
// one knows the transaction only as Ongoing and aborts it at its timeout.
// With the bug the records stay committed although the transaction's
// coordinator says CompleteAbort: a torn transaction.
func TestPlantedMarkerBeforePrepare(t *testing.T) {
	bugPair(t, "marker-before-prepare", func(t *testing.T, tv int16, planted bool, plant func(*Config)) {
		tc := startClusterWith(t, 3, 1, func(c *Config) {
			c.TransactionVersion = tv
			c.ReplicaLagMax = time.Minute // the cut followers stay in the ISR
			c.Txn.AbortTimedOutEvery = 100 * time.Millisecond
			c.Txn.WriteTimeout = 2 * time.Second
			plant(c)
		})
		tc.placeController(4)
		tc.createTopic("torn", 1, 1, nil)
		tc.createTxnState()
		data := tc.leader("torn", 0)
		id := tc.findTxnID("torn", data, true)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cl := tc.txnProducer(id, kgo.TransactionTimeout(3*time.Second))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		first := &kgo.Record{Topic: "torn", Value: []byte("t1")}
		if err := cl.ProduceSync(ctx, first, &kgo.Record{Topic: "torn", Value: []byte("t2")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		d, err := tc.describeTxn(id)
		if err != nil {
			t.Fatal(err)
		}
		var others []int
		for b := 1; b <= 3; b++ {
			if int32(b) != data {
				others = append(others, b)
			}
		}
		tc.block(int(data), others...)
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, d.ProducerID, d.ProducerEpoch, true
		resp, err := end.RequestWith(ctx, cl.Broker(int(data)))
		if err != nil {
			t.Fatal(err)
		}
		if e := kerr.ErrorForCode(resp.ErrorCode); e == nil {
			t.Fatal("EndTxn succeeded with PrepareCommit unreplicable")
		}
		lso := tc.listOffset("torn", 0, true)
		switch {
		case !planted && lso != first.Offset:
			t.Fatalf("correct coordinator: LSO %d, want %d: no marker without a durable PrepareCommit", lso, first.Offset)
		case planted && lso <= first.Offset+1:
			t.Fatalf("planted marker-before-prepare: LSO %d, want past the committed records", lso)
		}
		tc.kill(int(data))
		tc.heal()
		tc.start(int(data))
		tc.waitTxnState("the new coordinator aborts the timed-out transaction", id, "CompleteAbort", 30*time.Second, nil)
		tc.sentinels(tc.txnProducer(id+"-check"), "torn", 1, "end")
		got := tc.readUntil("torn", 1, true, "end")
		switch {
		case !planted && len(got) != 0:
			t.Fatalf("correct coordinator: read_committed saw %v of an aborted transaction", got)
		case planted && !slices.Equal(got, []string{"t1", "t2"}):
			t.Fatalf("planted: read_committed saw %v, want the torn transaction's records", got)
		}
	})
}
