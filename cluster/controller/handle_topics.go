package controller

import (
	"context"
	"crypto/rand"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
)

// maxTopicNameLen is Kafka's limit.
const maxTopicNameLen = 249

func validTopicName(n string) bool {
	if n == "" || n == "." || n == ".." || len(n) > maxTopicNameLen {
		return false
	}
	return strings.IndexFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '.' || r == '_' || r == '-')
	}) < 0
}

func (c *Controller) handleCreateTopics(ctx context.Context, r *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	active := c.IsActive()
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		if !active || ctx.Err() != nil {
			rt.ErrorCode = kerr.NotController.Code
		} else {
			c.createTopic(t, r.ValidateOnly, &rt)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Controller) createTopic(t kmsg.CreateTopicsRequestTopic, validateOnly bool, rt *kmsg.CreateTopicsResponseTopic) {
	img := c.Image()
	fail := func(e *kerr.Error, msg string) {
		rt.ErrorCode = e.Code
		rt.ErrorMessage = kmsg.StringPtr(msg)
	}
	if !validTopicName(t.Topic) {
		fail(kerr.InvalidTopicException, "invalid topic name")
		return
	}
	if _, ok := img.Topics[t.Topic]; ok {
		fail(kerr.TopicAlreadyExists, "topic exists")
		return
	}
	configs := map[string]string{}
	for _, cf := range t.Configs {
		if cf.Value != nil {
			configs[cf.Name] = *cf.Value
		}
	}
	var as [][]int32
	if len(t.ReplicaAssignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			fail(kerr.InvalidRequest, "both assignment and partitions/replication factor given")
			return
		}
		as = make([][]int32, len(t.ReplicaAssignment))
		for _, a := range t.ReplicaAssignment {
			if a.Partition < 0 || int(a.Partition) >= len(as) || as[a.Partition] != nil {
				fail(kerr.InvalidReplicaAssignment, "partitions must be numbered 0..n-1 once")
				return
			}
			as[a.Partition] = a.Replicas
		}
		if !validAssignment(img, as) {
			fail(kerr.InvalidReplicaAssignment, "bad replica assignment")
			return
		}
	} else {
		parts, rf := t.NumPartitions, t.ReplicationFactor
		if parts == -1 {
			parts = c.cfg.DefaultPartitions
		}
		if rf == -1 {
			rf = c.cfg.DefaultReplicationFactor
		}
		if parts <= 0 {
			fail(kerr.InvalidPartitions, "partitions must be positive")
			return
		}
		var ok bool
		if as, ok = assignReplicas(img, parts, rf); !ok {
			fail(kerr.InvalidReplicationFactor, "replication factor exceeds available brokers")
			return
		}
	}
	// LogConfig.validate (ControllerConfigurationValidator): unknown names
	// and bad values are INVALID_CONFIG, before anything is proposed.
	if e, msg := meta.ValidateTopicConfigs(configs, len(as[0])); e != nil {
		fail(e, msg)
		return
	}
	rt.NumPartitions, rt.ReplicationFactor = int32(len(as)), int16(len(as[0]))
	for k, v := range configs {
		cf := kmsg.NewCreateTopicsResponseTopicConfig()
		cf.Name, cf.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cf)
	}
	if validateOnly {
		return
	}
	var id [16]byte
	rand.Read(id[:])
	res, err := c.propose(record{Policy: c.cfg.policy(),
		CreateTopic: &createRec{Name: t.Topic, ID: id, Configs: configs, Assignment: as}})
	if err != nil {
		rt.ErrorCode = errCode(err)
		return
	}
	rt.ErrorCode = res.Code
	rt.TopicID = res.Topic.ID
}

func (c *Controller) handleDeleteTopics(ctx context.Context, r *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	for _, n := range r.TopicNames {
		targets = append(targets, target{name: kmsg.StringPtr(n)})
	}
	for _, t := range r.Topics {
		targets = append(targets, target{name: t.Topic, id: t.TopicID})
	}
	active := c.IsActive()
	for _, tg := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = tg.name, tg.id
		switch {
		case !active || ctx.Err() != nil:
			rt.ErrorCode = kerr.NotController.Code
		case tg.name == nil:
			t, ok := c.Image().TopicByID(tg.id)
			if !ok {
				rt.ErrorCode = kerr.UnknownTopicID.Code
				break
			}
			rt.Topic = kmsg.StringPtr(t.Name)
			rt.ErrorCode = c.deleteTopic(t.Name)
		default:
			if t, ok := c.Image().Topics[*tg.name]; ok {
				rt.TopicID = t.ID
			}
			rt.ErrorCode = c.deleteTopic(*tg.name)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Controller) deleteTopic(name string) int16 {
	res, err := c.propose(record{DeleteTopic: &deleteRec{Name: name}})
	if err != nil {
		return errCode(err)
	}
	return res.Code
}
