package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 19's bugs, each as a client met it.

// TestFetchNothingNewAnswersEmptyRecords: a Fetch of a partition with nothing
// new answers empty records, never null (librdkafka: "invalid MessageSetSize
// -1", and kcat -e never reached the end). Checked at v11, the version
// librdkafka 2.0 sends, for an empty partition, for the end of a partition
// with data, and for an unknown partition (errors carry empty records in
// Kafka too).
func TestFetchNothingNewAnswersEmptyRecords(t *testing.T) {
	b := startBroker(t, t.TempDir(), nil)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "empty", 2, nil)
	if _, err := produce(cl, "empty", "x"); err != nil { // partition 0 gets one record
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "empty"
	for p, off := range map[int32]int64{0: 1, 1: 0, 7: 0} {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, off, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
	}
	req.Topics = append(req.Topics, ft)
	// Pin the version: the raw connection speaks exactly v11.
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	if err := rawRoundTrip(ctx, b.Addr(), req, resp); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			seen++
			if rp.RecordBatches == nil {
				t.Errorf("partition %d (error %d): null records; Kafka sends empty bytes", rp.Partition, rp.ErrorCode)
			}
			if len(rp.RecordBatches) != 0 {
				t.Errorf("partition %d: %d bytes of records past the end", rp.Partition, len(rp.RecordBatches))
			}
		}
	}
	if seen != 3 {
		t.Fatalf("%d partitions answered, want 3", seen)
	}
}

// rawRoundTrip sends req at its set version on a fresh connection and
// decodes the answer into resp (whose version must match).
func rawRoundTrip(ctx context.Context, addr string, req kmsg.Request, resp kmsg.Response) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, 1)
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	var sz [4]byte
	if _, err := io.ReadFull(br, sz[:]); err != nil {
		return err
	}
	buf := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(br, buf); err != nil {
		return err
	}
	buf = buf[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		buf = buf[1:] // empty header tag buffer
	}
	return resp.ReadFrom(buf)
}

// TestProduceLargerThanMaxMessageBytes: a batch over the topic's
// max.message.bytes is refused with MESSAGE_TOO_LARGE and not written; a
// smaller one on the same topic succeeds.
func TestProduceLargerThanMaxMessageBytes(t *testing.T) {
	b := startBroker(t, t.TempDir(), nil)
	cl := newClient(t, b.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "small", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("1000")})
	_, err := produce(cl, "small", strings.Repeat("x", 2000))
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("2000-byte record on a 1000-byte topic: %v, want MESSAGE_TOO_LARGE", err)
	}
	r, err := produce(cl, "small", strings.Repeat("y", 500))
	if err != nil {
		t.Fatalf("500-byte record: %v", err)
	}
	if r.Offset != 0 {
		t.Fatalf("the refused batch took offsets: the next one landed at %d", r.Offset)
	}
}

// TestCreateTopicsUnknownConfig: an unknown topic config is INVALID_CONFIG
// "Unknown topic config name: X" (Kafka's LogConfig.validateNames), a bad
// value INVALID_CONFIG, and a known config Kafka accepts (one this cluster
// does not act on) is accepted and described back.
func TestCreateTopicsUnknownConfig(t *testing.T) {
	b := startBroker(t, t.TempDir(), nil)
	adm := kadm.NewClient(newClient(t, b.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		config, value, msg string
	}{
		{"kfake.is_internal", "true", "Unknown topic config name: kfake.is_internal"},
		{"min.insync.replicas", "zero", "Invalid value zero for configuration min.insync.replicas"},
		{"unclean.leader.election.enable", "yes", "Invalid value yes for configuration unclean.leader.election.enable"},
	} {
		resp, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{tc.config: &tc.value}, "bad")
		if err != nil {
			t.Fatal(err)
		}
		if r := resp["bad"]; !errors.Is(r.Err, kerr.InvalidConfig) || !strings.Contains(r.ErrMessage, tc.msg) {
			t.Fatalf("%s=%s: %v %q, want INVALID_CONFIG %q", tc.config, tc.value, r.Err, r.ErrMessage, tc.msg)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}, "ok"); err != nil {
		t.Fatalf("cleanup.policy=delete refused: %v", err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("ok", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		got[c.Key] = c
	}
	if c := got["cleanup.policy"]; c.Source != kmsg.ConfigSourceDynamicTopicConfig || c.MaybeValue() != "delete" {
		t.Fatalf("cleanup.policy described as %+v", c)
	}
	if c := got["max.message.bytes"]; c.Source != kmsg.ConfigSourceDefaultConfig || c.MaybeValue() != "1048588" {
		t.Fatalf("max.message.bytes described as %+v, want Kafka's default 1048588", c)
	}
}

// TestKafkaPythonVersionProbe: kafka-python 2.0.2's check_version sends
// ApiVersions v0 and, right behind it on the same connection, Metadata v0.
// Both must be answered and the connection kept: refusing Metadata v0
// closed it, and kafka-python discards what it read when it sees the close,
// lost the ApiVersions answer and took the broker for Kafka 0.9
// (IncompatibleBrokerVersion in KafkaAdminClient right after gregor up).
func TestKafkaPythonVersionProbe(t *testing.T) {
	b := startBroker(t, t.TempDir(), nil)
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var out []byte
	for i, req := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest()} {
		req.SetVersion(0)
		body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
		body = binary.BigEndian.AppendUint16(body, 0)
		body = binary.BigEndian.AppendUint32(body, uint32(i+1))
		body = binary.BigEndian.AppendUint16(body, 12)
		body = append(body, "kafka-python"...)
		body = req.AppendTo(body)
		out = append(append(out, binary.BigEndian.AppendUint32(nil, uint32(len(body)))...), body...)
	}
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := int32(1); i <= 2; i++ {
		var sz [4]byte
		if _, err := io.ReadFull(br, sz[:]); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		buf := make([]byte, binary.BigEndian.Uint32(sz[:]))
		if _, err := io.ReadFull(br, buf); err != nil {
			t.Fatal(err)
		}
		if corr := int32(binary.BigEndian.Uint32(buf)); corr != i {
			t.Fatalf("correlation %d, want %d", corr, i)
		}
		var resp kmsg.Response = kmsg.NewPtrApiVersionsResponse()
		if i == 2 {
			resp = kmsg.NewPtrMetadataResponse()
		}
		resp.SetVersion(0)
		if err := resp.ReadFrom(buf[4:]); err != nil {
			t.Fatalf("response %d does not decode at v0: %v", i, err)
		}
		if md, ok := resp.(*kmsg.MetadataResponse); ok && (len(md.Brokers) != 1 || md.Brokers[0].NodeID != 1) {
			t.Fatalf("Metadata v0 brokers %+v", md.Brokers)
		}
	}
	// Still open: one more request is answered.
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	body := binary.BigEndian.AppendUint16(nil, 18)
	body = binary.BigEndian.AppendUint16(body, 0)
	body = binary.BigEndian.AppendUint32(body, 3)
	body = binary.BigEndian.AppendUint16(body, 0xffff)
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		t.Fatal(err)
	}
	var sz [4]byte
	if _, err := io.ReadFull(br, sz[:]); err != nil {
		t.Fatalf("connection closed after the probe: %v", err)
	}
}
