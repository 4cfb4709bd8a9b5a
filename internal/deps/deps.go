//go:build tools

// Package deps pins the project's chosen dependencies in go.mod while the
// packages that use them are being written in parallel. Removed once each is
// imported by real code.
package deps

import (
	_ "github.com/anishathalye/porcupine"
	_ "github.com/google/nftables"
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb"
	_ "github.com/testcontainers/testcontainers-go"
	_ "github.com/testcontainers/testcontainers-go/network"
	_ "github.com/docker/docker/client"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/twmb/franz-go/pkg/kmsg"
	_ "github.com/vishvananda/netlink"
	_ "gopkg.in/yaml.v3"
)
