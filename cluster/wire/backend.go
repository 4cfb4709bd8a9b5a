package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
	"gregor/cluster/replica"
)

// Backend is what the protocol layer needs from a broker.
type Backend interface {
	NodeID() int32
	ClusterID() string
	// Image is the current metadata.
	Image() *meta.Image
	// Partition is this broker's replica of topic/index, or nil when it
	// hosts none.
	Partition(topic string, index int32) *replica.Partition
	// CreateTopic creates a topic (forwarded to the controller in a cluster).
	// partitions/rf of -1 take the broker defaults.
	CreateTopic(ctx context.Context, t TopicSpec) (*meta.Topic, *kerr.Error, string)
	DeleteTopic(ctx context.Context, name string) (*kerr.Error, string)
	// AutoCreateTopics reports whether Metadata may create missing topics.
	AutoCreateTopics() bool
	// BrokerDefaults are the topic-level configs this broker applies to
	// topics that do not set them (min.insync.replicas, ...).
	BrokerDefaults() map[string]string
	// ReadOnlyBrokerConfigs are broker configs this broker takes from its
	// command line and cannot change at runtime (replica.lag.time.max.ms),
	// by Kafka's names, with Kafka's default for each: a broker resource
	// describes them beside the dynamic ones, as Kafka's does.
	ReadOnlyBrokerConfigs() map[string]ReadOnlyConfig
	// NewProducerID allocates a producer id unique across the cluster.
	NewProducerID(ctx context.Context) (int64, int16, *kerr.Error)
}

// ReadOnlyConfig is a static broker config's value and Kafka's default.
type ReadOnlyConfig struct{ Value, KafkaDefault string }

// TopicSpec is a topic to create.
type TopicSpec struct {
	Name         string
	Partitions   int32
	RF           int16
	Configs      map[string]string
	ValidateOnly bool
}

// ControllerBackend is implemented by brokers that take part in a
// controller quorum.
type ControllerBackend interface {
	// Controller hands a controller RPC to this node's controller; false
	// when the broker has none (a single broker with local metadata).
	Controller(ctx context.Context, req kmsg.Request) (kmsg.Response, bool)
}
