package nsfault

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
)

// Usage is the CLI's help, shared by `gregor nsfault` and test binaries.
const Usage = `usage: nsfault COMMAND [flags]
  drop IP...                      drop IPv4 traffic to and from these addresses (replaces the list)
  heal                            remove the drop rules
  slow [--dev D] [--via netem|nftables] --delay 100ms --jitter 10ms --loss 1.5
                                  netem on the links (nftables: loss only, for kernels without netem)
  unslow [--dev D]                remove netem and the nftables loss rule
  probe [--dev D]                 print {"nftables":"","netem":""}: empty is "works", else the refusal
  show                            print the dropped addresses as JSON`

// Main runs one nsfault command in the current network namespace.
func Main(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", Usage)
	}
	c := Open(0)
	cmd, rest := args[0], args[1:]
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		_, err := fmt.Fprintln(stdout, Usage)
		return err
	}
	fs := flag.NewFlagSet("nsfault "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("dev", "", "comma-separated links (default: every link but loopback)")
	switch cmd {
	case "drop":
		ips := make([]net.IP, 0, len(rest))
		for _, a := range rest {
			ip := net.ParseIP(a)
			if ip == nil {
				return fmt.Errorf("drop: %q is not an IP address", a)
			}
			ips = append(ips, ip)
		}
		return c.Drop(ips)
	case "heal":
		return c.Heal()
	case "slow":
		delay := fs.Duration("delay", 0, "added delay")
		jitter := fs.Duration("jitter", 0, "delay jitter")
		loss := fs.Float64("loss", 0, "loss percent")
		via := fs.String("via", "netem", "netem or nftables")
		if err := fs.Parse(rest); err != nil {
			return fmt.Errorf("slow: %w\n%s", err, Usage)
		}
		switch *via {
		case "netem":
			return c.Netem(devs(*dev), *delay, *jitter, *loss)
		case "nftables":
			if *delay != 0 || *jitter != 0 {
				return fmt.Errorf("slow --via nftables does loss only; delay needs netem")
			}
			return c.Loss(*loss)
		}
		return fmt.Errorf("slow --via %q: use netem or nftables", *via)
	case "unslow":
		if err := fs.Parse(rest); err != nil {
			return fmt.Errorf("unslow: %w", err)
		}
		return c.Unslow(devs(*dev))
	case "probe":
		if err := fs.Parse(rest); err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		return json.NewEncoder(stdout).Encode(c.Probe(devs(*dev)))
	case "show":
		ips, err := c.Blocked()
		if err != nil {
			return err
		}
		s := make([]string, len(ips))
		for i, ip := range ips {
			s[i] = ip.String()
		}
		return json.NewEncoder(stdout).Encode(map[string][]string{"blocked": s})
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, Usage)
}

func devs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
