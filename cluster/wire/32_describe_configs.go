package wire

// DescribeConfigs: v0-4.
//
// Behaviour:
//   - a topic resource lists every topic config Kafka knows (meta.TopicConfigs),
//     each with its effective value and source, resolved as Kafka does: the
//     topic's own (DYNAMIC_TOPIC_CONFIG), this broker's dynamic config
//     (DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic default
//     (DYNAMIC_DEFAULT_BROKER_CONFIG), the broker's command line
//     (STATIC_BROKER_CONFIG, when it differs from Kafka's default), else
//     Kafka's default (DEFAULT_CONFIG, IsDefault);
//   - a broker resource named by a broker id lists the broker configs this
//     cluster can change at runtime, resolved the same way, then its
//     read-only ones (replica.lag.time.max.ms: STATIC_BROKER_CONFIG when it
//     differs from Kafka's default, else DEFAULT_CONFIG); the default
//     broker resource (name "") lists the cluster-wide dynamic configs set;
//   - ConfigNames filters; an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION,
//     another broker's id or an unknown resource type INVALID_REQUEST.
//     Synonyms and documentation are not returned.

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
)

func init() { register(32, 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := s.b.Image()
	static := s.b.BrokerDefaults()
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		add := func(k, v string, src kmsg.ConfigSource) {
			if r.ConfigNames != nil && !slices.Contains(r.ConfigNames, k) {
				return
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.Source = k, kmsg.StringPtr(v), src
			c.IsDefault = src == kmsg.ConfigSourceDefaultConfig
			rr.Configs = append(rr.Configs, c)
		}
		// KafkaApis.handleDescribeConfigsRequest: DESCRIBE_CONFIGS on each.
		if c := s.configCheck(hdr, kmsg.ACLOperationDescribeConfigs, r.ResourceType, r.ResourceName); c != 0 {
			rr.ErrorCode = c
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t := im.Topics[r.ResourceName]
			if t == nil {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			layers := im.Layers(t, s.b.NodeID(), static)
			for _, c := range meta.TopicConfigs() {
				v, src := layers.Resolve(c)
				add(c.Name, v, src)
			}
		case kmsg.ConfigResourceTypeBroker:
			if r.ResourceName == "" {
				for _, k := range sortedKeys(im.ClusterConfigs) {
					add(k, im.ClusterConfigs[k], kmsg.ConfigSourceDynamicDefaultBrokerConfig)
				}
				break
			}
			if r.ResourceName != strconv.Itoa(int(s.b.NodeID())) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				rr.ErrorMessage = kmsg.StringPtr("a broker describes only its own configs: send this to broker " + r.ResourceName)
				break
			}
			layers := im.Layers(nil, s.b.NodeID(), static)
			for _, name := range meta.DynamicBrokerConfigs() {
				c, _ := meta.LookupBrokerConfig(name)
				v, src := layers.Resolve(c)
				add(name, v, src)
			}
			ro := s.b.ReadOnlyBrokerConfigs()
			for _, name := range sortedKeys(ro) {
				src := kmsg.ConfigSourceStaticBrokerConfig
				if ro[name].Value == ro[name].KafkaDefault {
					src = kmsg.ConfigSourceDefaultConfig
				}
				n := len(rr.Configs)
				add(name, ro[name].Value, src)
				if len(rr.Configs) > n {
					rr.Configs[n].ReadOnly = true
				}
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			// Only the configs set on the group: the broker-level defaults
			// are the coordinator's (cluster/share), not metadata.
			gc := im.GroupConfigs[r.ResourceName]
			for _, k := range sortedKeys(gc) {
				add(k, gc[k], kmsg.ConfigSourceGroupConfig)
			}
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return now(resp)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
