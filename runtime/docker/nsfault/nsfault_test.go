package nsfault

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// newNS creates a scratch network namespace with loopback up, so the tests
// change nothing on the host. It needs root; without it the test skips.
func newNS(t *testing.T) netns.NsHandle {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Skipf("cannot read the current netns (%v): these tests need root on Linux", err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		t.Skipf("cannot create a netns (%v): these tests need root (CAP_SYS_ADMIN)", err)
	}
	if err := netns.Set(orig); err != nil {
		t.Fatalf("return to the original netns: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	return ns
}

// inNS runs f on a thread inside ns: sockets made there belong to ns.
func inNS(t *testing.T, ns netns.NsHandle, f func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic("cannot return to the original netns: " + err.Error())
		}
	}()
	f()
}

// echoServer answers one line per connection inside ns, on 127.0.0.1.
func echoServer(t *testing.T, ns netns.NsHandle) string {
	var ln net.Listener
	inNS(t, ns, func() {
		var err error
		ln, err = net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				c.Write([]byte(line))
			}()
		}
	}()
	return ln.Addr().String()
}

// talk dials addr from inside ns and exchanges one line within timeout.
func talk(t *testing.T, ns netns.NsHandle, addr string, timeout time.Duration) error {
	var conn net.Conn
	var err error
	inNS(t, ns, func() { conn, err = net.DialTimeout("tcp4", addr, timeout) })
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return errors.New("wrong answer " + line)
	}
	return nil
}

func TestDropBlocksTrafficAndHealRestoresIt(t *testing.T) {
	ns := newNS(t)
	c := Open(int(ns))
	addr := echoServer(t, ns)
	if err := talk(t, ns, addr, 2*time.Second); err != nil {
		t.Fatalf("before drop: %v", err)
	}
	if err := c.Drop([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.9.9.9")}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Blocked()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Equal(net.ParseIP("10.9.9.9")) || !got[1].Equal(net.ParseIP("127.0.0.1")) {
		t.Fatalf("blocked = %v", got)
	}
	if err := talk(t, ns, addr, 300*time.Millisecond); err == nil {
		t.Fatal("traffic to a dropped address got through")
	}
	// Replacing the list is atomic and drops the old addresses.
	if err := c.Drop([]net.IP{net.ParseIP("10.9.9.8")}); err != nil {
		t.Fatal(err)
	}
	if err := talk(t, ns, addr, 2*time.Second); err != nil {
		t.Fatalf("address no longer listed is still dropped: %v", err)
	}
	if err := c.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := c.Heal(); err != nil {
		t.Fatalf("second heal should be a no-op: %v", err)
	}
	if got, err := c.Blocked(); err != nil || len(got) != 0 {
		t.Fatalf("after heal blocked=%v err=%v", got, err)
	}
}

func TestDropRefusesIPv6AndTooMany(t *testing.T) {
	c := Open(0)
	if err := c.Drop([]net.IP{net.ParseIP("::1")}); err == nil {
		t.Fatal("IPv6 accepted")
	}
	many := make([]net.IP, MaxIPs+1)
	for i := range many {
		many[i] = net.IPv4(10, 0, byte(i>>8), byte(i))
	}
	if err := c.Drop(many); err == nil {
		t.Fatal("more than MaxIPs accepted")
	}
}

func TestLossDropsEverythingAt100AndUnslowRemovesIt(t *testing.T) {
	ns := newNS(t)
	c := Open(int(ns))
	addr := echoServer(t, ns)
	if err := c.Loss(100); err != nil {
		t.Fatal(err)
	}
	if err := talk(t, ns, addr, 300*time.Millisecond); err == nil {
		t.Fatal("100% loss let a connection through")
	}
	if err := c.Unslow([]string{"lo"}); err != nil {
		t.Fatal(err)
	}
	if err := talk(t, ns, addr, 2*time.Second); err != nil {
		t.Fatalf("after unslow: %v", err)
	}
}

// With 30% loss about 30% of datagrams vanish: the rule is a random draw per
// packet, not all-or-nothing. UDP counts the draw directly; a TCP exchange
// would fold in retransmission timers (a lost SYN costs a whole second) and
// made this test fail 1 run in a few hundred.
func TestLossIsPartial(t *testing.T) {
	ns := newNS(t)
	c := Open(int(ns))
	if err := c.Loss(30); err != nil {
		t.Fatal(err)
	}
	var rx net.PacketConn
	var tx net.Conn
	inNS(t, ns, func() {
		var err error
		if rx, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if tx, err = net.Dial("udp4", rx.LocalAddr().String()); err != nil {
			t.Fatal(err)
		}
	})
	defer rx.Close()
	defer tx.Close()
	// Expected 280 of 400 arrive (sd 9); the bounds are 8 sd away, so a
	// failure means the rule is not dropping about 30%.
	const sent, lo, hi = 400, 200, 360
	got := make(chan int, 1)
	go func() {
		n := 0
		buf := make([]byte, 16)
		// A bound, not a wait: the count ends at the end marker.
		rx.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			k, _, err := rx.ReadFrom(buf)
			if err != nil || string(buf[:k]) == "end" {
				got <- n
				return
			}
			n++
		}
	}()
	for i := 0; i < sent; i++ {
		if _, err := tx.Write([]byte("x")); err != nil && !errors.Is(err, syscall.EPERM) {
			t.Fatal(err)
		}
	}
	// The end marker goes out with the rule removed, so it arrives, after
	// every datagram that got through (one socket, one loopback queue).
	if err := c.Loss(0); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Write([]byte("end")); err != nil {
		t.Fatal(err)
	}
	n := <-got
	if n < lo || n > hi {
		t.Fatalf("30%% loss delivered %d of %d datagrams, want %d..%d", n, sent, lo, hi)
	}
	t.Logf("30%% loss delivered %d of %d datagrams", n, sent)
}

func TestNetemEitherWorksOrSaysUnavailable(t *testing.T) {
	ns := newNS(t)
	c := Open(int(ns))
	err := c.Netem([]string{"lo"}, 20*time.Millisecond, 0, 0)
	if err != nil {
		if !errors.Is(err, ErrNetemUnavailable) {
			t.Fatalf("netem failed without saying it is unavailable: %v", err)
		}
		t.Logf("this kernel has no netem: %v", err)
		p := c.Probe([]string{"lo"})
		if p.Netem == "" || p.NFTables != "" {
			t.Fatalf("probe = %+v, want netem refused and nftables working", p)
		}
		return
	}
	on, err := c.NetemOn("lo")
	if err != nil || !on {
		t.Fatalf("netem not installed: %v %v", on, err)
	}
	if err := c.Unslow([]string{"lo"}); err != nil {
		t.Fatal(err)
	}
	if on, _ := c.NetemOn("lo"); on {
		t.Fatal("unslow left netem")
	}
}

func TestSlowRefusesBadValues(t *testing.T) {
	c := Open(0)
	if err := c.Netem(nil, -time.Second, 0, 0); err == nil {
		t.Fatal("negative delay accepted")
	}
	if err := c.Loss(101); err == nil {
		t.Fatal("loss over 100 accepted")
	}
}

func TestMainUsageErrors(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{nil, {"bogus"}, {"drop", "not-an-ip"}, {"slow", "--via", "carrier-pigeon"}, {"slow", "--via", "nftables", "--delay", "1s"}} {
		if err := Main(args, &out); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestProbeReportsJSON(t *testing.T) {
	ns := newNS(t)
	p := Open(int(ns)).Probe([]string{"lo"})
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"nftables"`) {
		t.Fatalf("probe json %s", b)
	}
	if p.NFTables != "" {
		t.Fatalf("nftables refused in a fresh netns as root: %s", p.NFTables)
	}
}

func TestPickLinksSkipsLoopback(t *testing.T) {
	ns := newNS(t)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := pickLinks(h, nil); err == nil {
		t.Fatal("a namespace with only loopback gave links to slow")
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "gv0"}, PeerName: "gv1"}
	if err := h.LinkAdd(veth); err != nil {
		t.Skipf("cannot create a veth pair here: %v", err)
	}
	links, err := pickLinks(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	if strings.Join(names, ",") != "gv0,gv1" && strings.Join(names, ",") != "gv1,gv0" {
		t.Fatalf("links %v, want the veth pair and not lo", names)
	}
}
