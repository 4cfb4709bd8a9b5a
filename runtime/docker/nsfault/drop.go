package nsfault

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sort"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// IPv4 header offsets of the source and destination addresses.
const (
	offSaddr = 12
	offDaddr = 16
)

// Drop makes the namespace drop every IPv4 packet from or to ips (input and
// output chains of table DropTable), replacing any earlier list. An empty list
// heals. The replacement is one netlink batch: no moment without rules.
func (c *Conn) Drop(ips []net.IP) error {
	if len(ips) > MaxIPs {
		return fmt.Errorf("drop: %d addresses, at most %d", len(ips), MaxIPs)
	}
	v4 := make([]net.IP, 0, len(ips))
	for _, ip := range ips {
		b := ip.To4()
		if b == nil {
			return fmt.Errorf("drop: %v is not an IPv4 address", ip)
		}
		v4 = append(v4, b)
	}
	if len(v4) == 0 {
		return c.Heal()
	}
	nc, err := c.nft()
	if err != nil {
		return err
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: DropTable}
	// add-then-delete makes the delete succeed whether or not the table
	// existed; the kernel applies the whole batch or none of it.
	nc.AddTable(t)
	nc.DelTable(t)
	nc.AddTable(t)
	in := addFilterChain(nc, t, "input", nftables.ChainHookInput)
	out := addFilterChain(nc, t, "output", nftables.ChainHookOutput)
	for _, ip := range v4 {
		nc.AddRule(&nftables.Rule{Table: t, Chain: in, Exprs: dropAddr(offSaddr, ip)})
		nc.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: dropAddr(offDaddr, ip)})
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("nftables: install drop rules: %w", err)
	}
	return nil
}

// Heal deletes table DropTable if it exists.
func (c *Conn) Heal() error { return c.delTable(DropTable) }

// Blocked reads back the addresses the output chain drops, sorted.
func (c *Conn) Blocked() ([]net.IP, error) {
	nc, err := c.nft()
	if err != nil {
		return nil, err
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: DropTable}
	rules, err := nc.GetRules(t, &nftables.Chain{Name: "output", Table: t})
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("nftables: list rules: %w", err)
	}
	var ips []net.IP
	for _, r := range rules {
		for _, e := range r.Exprs {
			if cmp, ok := e.(*expr.Cmp); ok && len(cmp.Data) == 4 {
				ips = append(ips, net.IP(append([]byte(nil), cmp.Data...)))
			}
		}
	}
	sort.Slice(ips, func(i, j int) bool { return string(ips[i]) < string(ips[j]) })
	return ips, nil
}

func addFilterChain(nc *nftables.Conn, t *nftables.Table, name string, hook *nftables.ChainHook) *nftables.Chain {
	return nc.AddChain(&nftables.Chain{
		Name: name, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: hook, Priority: nftables.ChainPriorityFilter,
	})
}

// dropAddr is `ip saddr|daddr == ip drop`.
func dropAddr(offset uint32, ip net.IP) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte(ip.To4())},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

// delTable deletes a gregor table, absent or not, in one batch.
func (c *Conn) delTable(name string) error {
	nc, err := c.nft()
	if err != nil {
		return err
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: name}
	nc.AddTable(t)
	nc.DelTable(t)
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("nftables: delete table %s: %w", name, err)
	}
	return nil
}
