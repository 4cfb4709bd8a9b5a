// Package kconn is a minimal Kafka-protocol client connection for
// broker-to-broker traffic: controller RPCs (BrokerRegistration,
// BrokerHeartbeat, AlterPartition, forwarded CreateTopics/DeleteTopics) and,
// later, follower fetches.
//
// It frames requests with kmsg's RequestFormatter (request header v1, or v2
// with tagged fields for flexible versions, KIP-482), matches correlation ids,
// and decodes the response with the request's own version. Response header v1
// (tagged fields) is used for flexible responses except ApiVersions, whose
// response header is always v0 so that a client can parse it before it knows
// what the broker supports.
//
// A Conn runs one request at a time (a mutex); there is no pipelining. Any
// error on the wire (short read, deadline, bad correlation id, oversized
// frame) leaves the stream in an unknown position, so the Conn closes itself
// and every later call fails with ErrClosed: callers redial.
//
// Versions: a request goes out with the version the caller set
// (req.SetVersion), unless Options.Versions pins one for its key, or
// Options.Negotiate asked the peer with ApiVersions at dial time, in which case
// unpinned requests use min(req.MaxVersion(), peer max) for keys the peer
// lists.
package kconn
