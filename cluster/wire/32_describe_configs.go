package wire

// DescribeConfigs: v0-4.
//
// Behaviour: topic resources list the topic's own configs (source
// DYNAMIC_TOPIC_CONFIG) and, for keys the topic does not set, the broker's
// defaults (STATIC_BROKER_CONFIG); broker resources list the defaults.
// ConfigNames filters. An unknown topic answers UNKNOWN_TOPIC_OR_PARTITION.
// Synonyms and documentation are not returned.

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(32, 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := s.b.Image()
	defaults := s.b.BrokerDefaults()
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		want := func(k string) bool { return r.ConfigNames == nil || slices.Contains(r.ConfigNames, k) }
		add := func(k, v string, src kmsg.ConfigSource) {
			if !want(k) {
				return
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name = k
			val := v
			c.Value = &val
			c.Source = src
			c.IsDefault = src == kmsg.ConfigSourceDefaultConfig
			rr.Configs = append(rr.Configs, c)
		}
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t := im.Topics[r.ResourceName]
			if t == nil {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			for _, k := range sortedKeys(t.Configs) {
				add(k, t.Configs[k], kmsg.ConfigSourceDynamicTopicConfig)
			}
			for _, k := range sortedKeys(defaults) {
				if _, set := t.Configs[k]; !set {
					add(k, defaults[k], kmsg.ConfigSourceStaticBrokerConfig)
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			if r.ResourceName != "" && r.ResourceName != strconv.Itoa(int(s.b.NodeID())) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				break
			}
			for _, k := range sortedKeys(defaults) {
				add(k, defaults[k], kmsg.ConfigSourceStaticBrokerConfig)
			}
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return now(resp)
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
