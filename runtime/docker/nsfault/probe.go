package nsfault

import (
	"fmt"

	"github.com/google/nftables"
)

// Probe is what the kernel lets this namespace do. An empty string is "works";
// otherwise it is the kernel's refusal, for the report.
type Probe struct {
	NFTables string `json:"nftables"`
	Netem    string `json:"netem"`
}

// Probe tries each mechanism for real and undoes it: nftables by creating and
// deleting a table, netem by installing a zero netem qdisc on the links and
// removing it.
func (c *Conn) Probe(devs []string) Probe {
	var p Probe
	if err := c.probeNFT(); err != nil {
		p.NFTables = err.Error()
	}
	if err := c.Netem(devs, 0, 0, 0); err != nil {
		p.Netem = err.Error()
	} else if err := c.Unslow(devs); err != nil {
		p.Netem = fmt.Sprintf("installed but could not remove: %v", err)
	}
	return p
}

func (c *Conn) probeNFT() error {
	nc, err := c.nft()
	if err != nil {
		return err
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: probeTable}
	nc.AddTable(t)
	addFilterChain(nc, t, "output", nftables.ChainHookOutput)
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("nftables refused: %w", err)
	}
	return c.delTable(probeTable)
}
