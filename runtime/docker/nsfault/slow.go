package nsfault

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// lossScale is the resolution of nftables loss: 1/10000 = 0.01 percent.
const lossScale = 10000

// MaxDelay bounds netem delay and jitter: beyond it a node is not slow but gone.
const MaxDelay = time.Minute

// Netem replaces the root qdisc of every link named in devs (nil: every link
// but loopback) with netem delay +- jitter and loss percent, egress.
func (c *Conn) Netem(devs []string, delay, jitter time.Duration, lossPct float64) error {
	if err := checkSlow(delay, jitter, lossPct); err != nil {
		return err
	}
	h, err := c.netlink()
	if err != nil {
		return err
	}
	defer h.Close()
	links, err := pickLinks(h, devs)
	if err != nil {
		return err
	}
	for _, l := range links {
		q := netlink.NewNetem(netlink.QdiscAttrs{
			LinkIndex: l.Attrs().Index,
			Handle:    netlink.MakeHandle(1, 0),
			Parent:    netlink.HANDLE_ROOT,
		}, netlink.NetemQdiscAttrs{
			Latency: uint32(delay.Microseconds()),
			Jitter:  uint32(jitter.Microseconds()),
			Loss:    float32(lossPct),
		})
		if err := h.QdiscReplace(q); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("%w: %s: %v", ErrNetemUnavailable, l.Attrs().Name, err)
			}
			return fmt.Errorf("netem on %s: %w", l.Attrs().Name, err)
		}
	}
	return nil
}

// Loss drops lossPct percent of outgoing IPv4 packets at random with an
// nftables rule (`numgen random mod 10000 < n drop`), for kernels without netem.
func (c *Conn) Loss(lossPct float64) error {
	if err := checkSlow(0, 0, lossPct); err != nil {
		return err
	}
	n := uint32(math.Round(lossPct * lossScale / 100))
	if n == 0 {
		return c.delTable(LossTable)
	}
	nc, err := c.nft()
	if err != nil {
		return err
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: LossTable}
	nc.AddTable(t)
	nc.DelTable(t)
	nc.AddTable(t)
	out := addFilterChain(nc, t, "output", nftables.ChainHookOutput)
	nc.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: randomDrop(n)})
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("nftables: install loss rule: %w", err)
	}
	return nil
}

// randomDrop is `numgen random mod 10000 < n drop`. numgen writes a host-order
// u32 and cmp compares bytes, so the value is turned big-endian first.
func randomDrop(n uint32) []expr.Any {
	be := make([]byte, 4)
	binary.BigEndian.PutUint32(be, n)
	return []expr.Any{
		&expr.Numgen{Register: 1, Modulus: lossScale, Type: unix.NFT_NG_RANDOM},
		&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
		&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: be},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

// Unslow removes netem root qdiscs from devs (nil: every link but loopback)
// and the nftables loss table. Links without netem are left as they are.
func (c *Conn) Unslow(devs []string) error {
	h, err := c.netlink()
	if err != nil {
		return err
	}
	defer h.Close()
	links, err := pickLinks(h, devs)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range links {
		qs, err := h.QdiscList(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("list qdiscs of %s: %w", l.Attrs().Name, err))
			continue
		}
		for _, q := range qs {
			if q.Type() == "netem" && q.Attrs().Parent == netlink.HANDLE_ROOT {
				if err := h.QdiscDel(q); err != nil {
					errs = append(errs, fmt.Errorf("delete netem on %s: %w", l.Attrs().Name, err))
				}
			}
		}
	}
	if err := c.delTable(LossTable); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// NetemOn reports whether a link carries a root netem qdisc (for tests and show).
func (c *Conn) NetemOn(dev string) (bool, error) {
	h, err := c.netlink()
	if err != nil {
		return false, err
	}
	defer h.Close()
	l, err := h.LinkByName(dev)
	if err != nil {
		return false, fmt.Errorf("link %s: %w", dev, err)
	}
	qs, err := h.QdiscList(l)
	if err != nil {
		return false, err
	}
	for _, q := range qs {
		if q.Type() == "netem" {
			return true, nil
		}
	}
	return false, nil
}

func checkSlow(delay, jitter time.Duration, lossPct float64) error {
	if delay < 0 || delay > MaxDelay || jitter < 0 || jitter > MaxDelay {
		return fmt.Errorf("delay %v jitter %v: each must be in [0, %v]", delay, jitter, MaxDelay)
	}
	if !(lossPct >= 0 && lossPct <= 100) {
		return fmt.Errorf("loss %v%%: must be in [0, 100]", lossPct)
	}
	return nil
}

// pickLinks resolves names, or every non-loopback link when names is empty.
func pickLinks(h *netlink.Handle, names []string) ([]netlink.Link, error) {
	if len(names) > 0 {
		out := make([]netlink.Link, 0, len(names))
		for _, n := range names {
			l, err := h.LinkByName(n)
			if err != nil {
				return nil, fmt.Errorf("link %s: %w", n, err)
			}
			out = append(out, l)
		}
		return out, nil
	}
	all, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var out []netlink.Link
	for _, l := range all {
		if l.Attrs().Flags&net.FlagLoopback == 0 {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no link but loopback: name one with --dev")
	}
	return out, nil
}
