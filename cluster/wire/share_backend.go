package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/share"
)

// ShareBackend is implemented by brokers that run KIP-932's share roles
// (cluster/share): the share-group coordinator, the share-partition leader
// and the share coordinator. A broker without them answers share requests
// UNSUPPORTED_VERSION and advertises no share.version.
type ShareBackend interface {
	ShareGroups() *share.Groups
	ShareManager() *share.Manager
	ShareState() *share.StateCoordinator
}

// shareBackend returns the server's share roles, or nil.
func (s *Server) shareBackend() ShareBackend {
	sb, ok := s.b.(ShareBackend)
	if !ok || sb.ShareGroups() == nil {
		return nil
	}
	return sb
}

// shareKey says whether API key is one of KIP-932's: advertised only by a
// broker that runs share groups.
func shareKey(key int16) bool {
	return (key >= 76 && key <= 79) || (key >= 83 && key <= 86) || (key >= 90 && key <= 92)
}

// shareVersionFeature is Kafka's ShareVersion.FEATURE_NAME: level 1 turns
// share groups on (Kafka 4.1+).
const shareVersionFeature = "share.version"

// noShare is the answer of a share API on a broker without share roles.
var noShare = kerr.UnsupportedVersion

// addShareVersion advertises share.version 1 (KIP-584 features) when the
// broker runs the share roles, as a Kafka 4.2 cluster with share groups on.
func (s *Server) addShareVersion(resp *kmsg.ApiVersionsResponse) {
	if s.shareBackend() == nil {
		return
	}
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = shareVersionFeature, 0, 1
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = shareVersionFeature, 1, 1
	resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	resp.FinalizedFeaturesEpoch = 1
}
