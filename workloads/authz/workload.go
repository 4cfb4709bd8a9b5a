package authz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/workloads/kit"
)

// Timings of the grantor: a binding stays granted for grantHold plus up to
// jitter, revoked for the bound plus revokedExtra plus up to jitter, so
// every revocation leaves its principal's clients time past the bound.
const (
	grantHold    = 2 * time.Second
	revokedExtra = 3 * time.Second
	jitter       = 2 * time.Second
	// aclTimeout bounds one CreateAcls or DeleteAcls (franz-go retries
	// inside it: NOT_CONTROLLER, a lost connection).
	aclTimeout = 15 * time.Second
	// opTimeout bounds one send or fetch.
	opTimeout = 5 * time.Second
)

// Workload is the principals' producers and consumers and the grantor.
type Workload struct {
	s          kit.Shared
	env        kit.Env
	rec        *kit.Recorder
	bound      time.Duration
	principals []principal
	clients    *kit.Clients[*kit.Client]
	admin      *kgo.Client
	adm        *kadm.Client
}

// principal is one SCRAM user the workload made; its password is derived
// from the seed and never written anywhere.
type principal struct {
	user, password string
	index          int
}

func (p principal) name() string { return "User:" + p.user }

func (p principal) mechanism() kgo.Opt {
	return kgo.SASL(scram.Auth{User: p.user, Pass: p.password}.AsSha512Mechanism())
}

// New prepares the workload; the clients' security must be SASL (its user
// is the super user the workload manages ACLs and credentials with).
func New(s kit.Shared, env kit.Env) (*Workload, error) {
	if sec := dialer.Security(); sec == nil || !sec.SASL() {
		return nil, errors.New("authz: the workload needs SASL (--security-protocol SASL_PLAINTEXT or SASL_SSL, with --sasl-user and --sasl-password-file of a super user)")
	}
	w := &Workload{s: s, env: env, rec: kit.NewRecorder(env.History, env.Epoch), bound: Bound(s.SessionTimeout),
		clients: kit.NewClients[*kit.Client](s.Seed, 0x61757468)} // "auth"
	sum := sha256.Sum256([]byte(strconv.FormatInt(s.Seed, 10) + "/gregor-authz"))
	for i := range s.Producers {
		w.principals = append(w.principals, principal{user: fmt.Sprintf("gregor-authz-%d", i),
			password: hex.EncodeToString(sum[:]) + strconv.Itoa(i), index: i})
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(env.Bootstrap...), dialer.Opt(time.Second), dialer.Auth(),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		return nil, err
	}
	w.admin, w.adm = admin, kadm.NewClient(admin)
	return w, nil
}

// Ops counts completed operations.
func (w *Workload) Ops() int64 { return w.rec.Ops() }

// Crash is the client-crash nemesis's hook.
func (w *Workload) Crash() (int, func(), bool) { return w.clients.Crash() }

// FinalRead has nothing to read: the checks are the principals' own
// operations during the run.
func (w *Workload) FinalRead(context.Context) error {
	w.admin.Close()
	return nil
}

// Run makes the principals' credentials, then drives the grantor and each
// principal's producer and consumer until ctx ends.
func (w *Workload) Run(ctx context.Context) error {
	if err := w.setup(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, p := range w.principals {
		for _, op := range []string{history.ACLWrite, history.ACLRead} {
			rng := rand.New(rand.NewPCG(uint64(w.s.Seed), uint64(p.index*2+len(op))))
			wg.Go(func() { w.grantLoop(ctx, p, op, rng) })
		}
		wg.Go(func() { w.produceLoop(ctx, p) })
		wg.Go(func() { w.fetchLoop(ctx, p) })
	}
	wg.Wait()
	return nil
}

// setup upserts every principal's SCRAM-SHA-512 credential, bounded.
func (w *Workload) setup(ctx context.Context) error {
	var ups []kadm.UpsertSCRAM
	for _, p := range w.principals {
		ups = append(ups, kadm.UpsertSCRAM{User: p.user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: p.password})
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	// Bounded by sctx: each attempt waits 200 ms after a failure.
	for {
		res, err := w.adm.AlterUserSCRAMs(sctx, nil, ups)
		if err == nil {
			err = res.Error()
		}
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-sctx.Done():
			return fmt.Errorf("authz: making the principals' SCRAM credentials: %v", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// binding is the one ACL the grantor manages for (p, op): ALLOW op on the
// run's topic from any host.
func (w *Workload) binding(p principal, op string) *kadm.ACLBuilder {
	o := kadm.OpWrite
	if op == history.ACLRead {
		o = kadm.OpRead
	}
	return kadm.NewACLs().Allow(p.name()).AllowHosts("*").Topics(w.s.Topic).Operations(o).ResourcePatternType(kadm.ACLPatternLiteral)
}

// grantLoop grants and revokes p's op in turn, starting with a grant.
func (w *Workload) grantLoop(ctx context.Context, p principal, op string, rng *rand.Rand) {
	proc := w.rec.NewProcess()
	for grant := true; ctx.Err() == nil; grant = !grant {
		w.aclOp(ctx, proc, p, op, grant)
		hold := grantHold
		if !grant {
			hold = w.bound + revokedExtra
		}
		hold += time.Duration(rng.Int64N(int64(jitter)))
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
	}
}

// aclOp is one acl line: CreateAcls (grant) or DeleteAcls (revoke) of the
// binding, through the active controller; ok only when every result is
// clean, unknown otherwise (an answer lost is not a refusal).
func (w *Workload) aclOp(ctx context.Context, proc int, p principal, op string, grant bool) {
	v := history.AuthzACL{Action: history.ACLRevoke, Principal: p.name(), Operation: op}
	if grant {
		v.Action = history.ACLGrant
	}
	w.rec.Write(history.AuthzOp(history.Process(proc), history.Invoke, history.FACL, v))
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), aclTimeout)
	defer cancel()
	var err error
	if grant {
		var res kadm.CreateACLsResults
		if res, err = w.adm.CreateACLs(actx, w.binding(p, op)); err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
	} else {
		var res kadm.DeleteACLsResults
		if res, err = w.adm.DeleteACLs(actx, w.binding(p, op)); err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		v.BoundMs = w.bound.Milliseconds()
	}
	typ := history.OK
	if err != nil {
		typ = history.Info
	}
	done := history.AuthzOp(history.Process(proc), typ, history.FACL, v)
	if err != nil {
		done.Error = kit.ErrorName(err)
	}
	w.rec.Write(done)
}
