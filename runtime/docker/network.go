package docker

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"strings"

	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
)

// Nodes get fixed IPs so that every node's flags can name its peers before
// any container starts: node i (0-based, in spec order) is .(firstHost+i).
const firstHost = 10

// subnetTries bounds the search for a /24 no other network on the engine uses.
const subnetTries = 16

// candidateSubnet is the try-th /24 for a run, in 10.200.0.0/13: spread by
// the run id so that concurrent runs rarely try the same one first.
func candidateSubnet(runID string, try int) *net.IPNet {
	h := fnv.New32a()
	h.Write([]byte(runID))
	n := (h.Sum32() + uint32(try)*7919) % (8 * 256)
	return &net.IPNet{IP: net.IPv4(10, byte(200+n/256), byte(n%256), 0).To4(), Mask: net.CIDRMask(24, 32)}
}

// hostIP is the address of the i-th host of a /24.
func hostIP(subnet *net.IPNet, i int) net.IP {
	ip := append(net.IP(nil), subnet.IP.To4()...)
	ip[3] = byte(i)
	return ip
}

// createNetwork makes the cluster's private bridge with a free /24. Like a
// container create (createNode), each create is waited out rather than
// abandoned on cancellation, so the network is known to Close.
func (r *Runtime) createNetwork(ctx context.Context, runID string, labels map[string]string) (*testcontainers.DockerNetwork, *net.IPNet, error) {
	var lastErr error
	for try := 0; try < subnetTries; try++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("create network: %w", err)
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
		sn := candidateSubnet(runID, try)
		nw, err := tcnetwork.New(cctx,
			tcnetwork.WithLabels(labels),
			tcnetwork.WithIPAM(&dnetwork.IPAM{Config: []dnetwork.IPAMConfig{{
				Subnet:  sn.String(),
				Gateway: hostIP(sn, 1).String(),
			}}}),
		)
		cancel()
		if err == nil {
			return nw, sn, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "overlap") {
			break
		}
	}
	return nil, nil, fmt.Errorf("create network: %w", lastErr)
}
