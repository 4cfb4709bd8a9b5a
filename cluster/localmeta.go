package cluster

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/meta"
	"gregor/cluster/wire"
	"gregor/internal/atomicfile"
	"gregor/internal/fsys"
)

// localMeta is the metadata of a single-broker cluster: this broker is the
// only replica and leader of every partition. It persists topics in
// <data>/metadata.json and starts a new leader epoch at every start, as a
// controller would on re-electing the broker after a restart. Multi-broker
// clusters replace it with the controller quorum.
type localMeta struct {
	mu   sync.Mutex
	path string
	cfg  *Config
	im   *meta.Image
}

type persistedTopic struct {
	Name        string            `json:"name"`
	ID          [16]byte          `json:"id"`
	Partitions  int32             `json:"partitions"`
	Configs     map[string]string `json:"configs"`
	LeaderEpoch int32             `json:"leader_epoch"`
}

func openLocalMeta(cfg *Config, host string, port int32) (*localMeta, error) {
	m := &localMeta{path: filepath.Join(cfg.DataDir, "metadata.json"), cfg: cfg}
	im := meta.Empty()
	im.ControllerID = cfg.NodeID
	im.Brokers[cfg.NodeID] = meta.Broker{ID: cfg.NodeID, Host: host, Port: port}
	var topics []persistedTopic
	if b, err := fsys.Or(cfg.FS).ReadFile(m.path); err == nil {
		if err := json.Unmarshal(b, &topics); err != nil {
			return nil, fmt.Errorf("reading %s: %w (delete it to start with no topics)", m.path, err)
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	for _, pt := range topics {
		pt.LeaderEpoch++ // a restart is a new leadership
		im.Topics[pt.Name] = m.topic(pt)
	}
	m.im = im
	return m, m.persist()
}

func (m *localMeta) topic(pt persistedTopic) *meta.Topic {
	t := &meta.Topic{Name: pt.Name, ID: pt.ID, Configs: pt.Configs, Internal: meta.IsInternal(pt.Name)}
	me := m.cfg.NodeID
	for i := int32(0); i < pt.Partitions; i++ {
		t.Partitions = append(t.Partitions, meta.Partition{
			Topic: pt.Name, Index: i, Replicas: []int32{me}, ISR: []int32{me},
			Leader: me, LeaderEpoch: pt.LeaderEpoch,
		})
	}
	return t
}

func (m *localMeta) image() *meta.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.im
}

// persist writes the topic list atomically. Caller holds mu (or is opening).
func (m *localMeta) persist() error {
	var topics []persistedTopic
	for _, name := range m.im.SortedTopics() {
		t := m.im.Topics[name]
		epoch := int32(0)
		if len(t.Partitions) > 0 {
			epoch = t.Partitions[0].LeaderEpoch
		}
		topics = append(topics, persistedTopic{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions)), Configs: t.Configs, LeaderEpoch: epoch})
	}
	b, err := json.MarshalIndent(topics, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFileFS(fsys.Or(m.cfg.FS), m.path, b, 0o644)
}

// next publishes a modified copy of the image.
func (m *localMeta) next(f func(im *meta.Image)) *meta.Image {
	im := &meta.Image{Version: m.im.Version + 1, ControllerID: m.im.ControllerID, Brokers: maps.Clone(m.im.Brokers), Topics: maps.Clone(m.im.Topics)}
	f(im)
	m.im = im
	return im
}

var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// ValidateTopic checks a topic spec against a cluster of `brokers` brokers,
// returning a Kafka error and a message that names the fix.
func ValidateTopic(spec wire.TopicSpec, brokers int) (*kerr.Error, string) {
	if !legalTopic.MatchString(spec.Name) || spec.Name == "." || spec.Name == ".." {
		return kerr.InvalidTopicException, fmt.Sprintf("topic name %q: use 1-249 characters of [a-zA-Z0-9._-]", spec.Name)
	}
	if spec.Partitions < 1 {
		return kerr.InvalidPartitions, fmt.Sprintf("%d partitions: give at least 1", spec.Partitions)
	}
	if spec.RF < 1 || int(spec.RF) > brokers {
		return kerr.InvalidReplicationFactor, fmt.Sprintf("replication factor %d with %d live brokers: give 1..%d", spec.RF, brokers, brokers)
	}
	return meta.ValidateTopicConfigs(spec.Configs, int(spec.RF))
}

func (m *localMeta) create(spec wire.TopicSpec) (*meta.Topic, *kerr.Error, string) {
	if spec.Partitions == -1 {
		spec.Partitions = m.cfg.DefaultPartitions
	}
	if spec.RF == -1 {
		spec.RF = 1
	}
	if e, msg := ValidateTopic(spec, 1); e != nil {
		return nil, e, msg
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.im.Topics[spec.Name] != nil {
		return nil, kerr.TopicAlreadyExists, fmt.Sprintf("topic %q already exists", spec.Name)
	}
	if spec.ValidateOnly {
		return &meta.Topic{Name: spec.Name, Configs: spec.Configs, Partitions: make([]meta.Partition, spec.Partitions)}, nil, ""
	}
	pt := persistedTopic{Name: spec.Name, Partitions: spec.Partitions, Configs: spec.Configs}
	if _, err := rand.Read(pt.ID[:]); err != nil {
		return nil, kerr.UnknownServerError, err.Error()
	}
	t := m.topic(pt)
	m.next(func(im *meta.Image) { im.Topics[spec.Name] = t })
	if err := m.persist(); err != nil {
		return nil, kerr.KafkaStorageError, err.Error()
	}
	return t, nil, ""
}

func (m *localMeta) delete(name string) (*kerr.Error, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.im.Topics[name] == nil {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("topic %q does not exist", name)
	}
	m.next(func(im *meta.Image) { delete(im.Topics, name) })
	if err := m.persist(); err != nil {
		return kerr.KafkaStorageError, err.Error()
	}
	return nil, ""
}
