package wire

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readResponse reads one size-prefixed response and returns its
// correlation id and body (after a v0 response header).
func readResponse(t *testing.T, c net.Conn) (int32, []byte) {
	t.Helper()
	var sz [4]byte
	if _, err := io.ReadFull(c, sz[:]); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:]
}

// TestApiVersionsKIP511RetryOnSameConnection: a client newer than us sends
// ApiVersions v4 in the flexible layout (request header v2 with a tag
// buffer, a body carrying its software name and version, as librdkafka and
// the Java client do). KIP-511: the answer is a v0 ApiVersionsResponse,
// header v0, error UNSUPPORTED_VERSION, listing ApiVersions' own versions; the
// connection stays open, and the client's retry at our highest version is
// answered in full on it.
func TestApiVersionsKIP511RetryOnSameConnection(t *testing.T) {
	s := testServer()
	c := dialServer(t, s)

	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "librdkafka", "9.9.9"
	req.SetVersion(3) // the v3 body is v4's too
	body := binary.BigEndian.AppendUint16(nil, 18)
	body = binary.BigEndian.AppendUint16(body, 4)
	body = binary.BigEndian.AppendUint32(body, 11)
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "kcat"...)
	body = append(body, 0) // header tag buffer
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := c.Write(append(frame, body...)); err != nil {
		t.Fatal(err)
	}
	corr, raw := readResponse(t, c)
	if corr != 11 {
		t.Fatalf("correlation id %d, want 11", corr)
	}
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.SetVersion(0)
	if err := v0.ReadFrom(raw); err != nil {
		t.Fatalf("the answer is not a v0 ApiVersionsResponse: %v (%x)", err, raw)
	}
	if v0.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", v0.ErrorCode)
	}
	var self *kmsg.ApiVersionsResponseApiKey
	for i, k := range v0.ApiKeys {
		if k.ApiKey == 18 {
			self = &v0.ApiKeys[i]
		}
	}
	if self == nil || self.MinVersion != 0 || self.MaxVersion != 3 || len(v0.ApiKeys) != 1 {
		// Only ApiVersions' own range, as Kafka: a client given the
		// whole table at v0 may keep it (franz-go does) and never learn
		// the v3 features (transaction.version).
		t.Fatalf("want only ApiVersions' own range 0-3 in %+v", v0.ApiKeys)
	}

	// The retry at v3 on the same connection.
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frameFor(req, 3)))), frameFor(req, 3)...)); err != nil {
		t.Fatalf("connection closed after the KIP-511 answer: %v", err)
	}
	corr, raw = readResponse(t, c)
	v3 := kmsg.NewPtrApiVersionsResponse()
	v3.SetVersion(3)
	if err := v3.ReadFrom(raw); err != nil {
		t.Fatalf("retry answer: %v", err)
	}
	// Every registered key but KIP-848's two and KIP-932's, which
	// testServer does not offer (Options.ConsumerProtocol off, no share
	// roles).
	share := 0
	for k := range apis {
		if shareKey(k) {
			share++
		}
	}
	if want := len(apis) - 2 - share; share != 11 || corr != 7 || v3.ErrorCode != 0 || len(v3.ApiKeys) != want {
		t.Fatalf("retry answered corr %d error %d with %d keys, want 7, 0, %d", corr, v3.ErrorCode, len(v3.ApiKeys), want)
	}
}

// apiVersionsV3 asks s for ApiVersions v3 on a fresh connection.
func apiVersionsV3(t *testing.T, s *Server) *kmsg.ApiVersionsResponse {
	t.Helper()
	c := dialServer(t, s)
	req := kmsg.NewPtrApiVersionsRequest()
	f := frameFor(req, 3)
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(f))), f...)); err != nil {
		t.Fatal(err)
	}
	_, raw := readResponse(t, c)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	return resp
}

// consumerProtocolOffered reports which of KIP-848's signs resp carries:
// key 68 (what franz-go's should848 looks for), key 69, group.version.
func consumerProtocolOffered(resp *kmsg.ApiVersionsResponse) (hb, describe, feature bool) {
	for _, k := range resp.ApiKeys {
		hb = hb || k.ApiKey == 68 && k.MaxVersion >= 1
		describe = describe || k.ApiKey == 69
	}
	for _, f := range resp.FinalizedFeatures {
		feature = feature || f.Name == groupVersionFeature && f.MaxVersionLevel == 1
	}
	return hb, describe, feature
}

// TestConsumerProtocolGate: a broker without
// group.coordinator.rebalance.protocols' "consumer" neither advertises
// KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe, group.version),
// so clients stay classic, nor takes a heartbeat (UNSUPPORTED_VERSION, as
// KafkaApis.handleConsumerGroupHeartbeat); with it, all three are offered.
func TestConsumerProtocolGate(t *testing.T) {
	off := testServer()
	if hb, d, f := consumerProtocolOffered(apiVersionsV3(t, off)); hb || d || f {
		t.Fatalf("consumer protocol off, yet advertised: heartbeat %v, describe %v, group.version %v", hb, d, f)
	}
	c := dialServer(t, off)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "g", "m", 0
	f := frameFor(hb, 1)
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(f))), f...)); err != nil {
		t.Fatal(err)
	}
	_, raw := readResponse(t, c)
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.SetVersion(1)
	raw = raw[1:] // the flexible response header's tag buffer
	if err := resp.ReadFrom(raw); err != nil || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("heartbeat to a classic-only broker: error code %d (%v), want UNSUPPORTED_VERSION", resp.ErrorCode, err)
	}

	on := NewServer(emptyBackend{}, Options{MaxRequestBytes: 1 << 20, Logger: off.log, ConsumerProtocol: true})
	if hb, d, f := consumerProtocolOffered(apiVersionsV3(t, on)); !hb || !d || !f {
		t.Fatalf("consumer protocol on, advertised: heartbeat %v, describe %v, group.version %v; want all", hb, d, f)
	}
}

// TestShareKeysOnlyWithShareRoles: a broker without share roles (its
// --group-protocols lacks share) advertises none of KIP-932's keys, so
// clients never pick share groups there (franz-go checks ShareFetch).
func TestShareKeysOnlyWithShareRoles(t *testing.T) {
	resp := apiVersionsV3(t, testServer())
	for _, k := range resp.ApiKeys {
		if shareKey(k.ApiKey) {
			t.Errorf("share key %d advertised by a broker without share roles", k.ApiKey)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == shareVersionFeature {
			t.Errorf("share.version finalized by a broker without share roles")
		}
	}
	if !shareKey(78) || !shareKey(79) || shareKey(68) || shareKey(80) {
		t.Error("shareKey misnames KIP-932's keys")
	}
}
