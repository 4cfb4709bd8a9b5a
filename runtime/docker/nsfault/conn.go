package nsfault

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Conn injects faults in one network namespace.
type Conn struct {
	// nsFd is a file descriptor of the target network namespace, or 0 for the
	// namespace of the calling process (the container's, under docker exec).
	nsFd int
}

// Open returns a Conn for the namespace nsFd (0: the current one). The fd
// must stay open while the Conn is used.
func Open(nsFd int) *Conn { return &Conn{nsFd: nsFd} }

func (c *Conn) nft() (*nftables.Conn, error) {
	var opts []nftables.ConnOption
	if c.nsFd > 0 {
		opts = append(opts, nftables.WithNetNSFd(c.nsFd))
	}
	nc, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return nc, nil
}

func (c *Conn) netlink() (*netlink.Handle, error) {
	var (
		h   *netlink.Handle
		err error
	)
	if c.nsFd > 0 {
		h, err = netlink.NewHandleAt(netns.NsHandle(c.nsFd))
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	return h, nil
}
