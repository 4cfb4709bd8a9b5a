package wire

// ApiVersions: v0-3.
//
// Behaviour:
//   - answers with exactly the keys and versions registered in this package,
//     which are the ones really implemented, capped by the cluster's
//     transaction version (maxVersion);
//   - v3+: the finalized feature transaction.version (1 or 2), by which
//     clients choose between Kafka 3.x transactions and KIP-890's, and
//     group.version 1 (KIP-848's consumer protocol, 68_...) when the broker
//     runs it (Options.ConsumerProtocol; without it keys 68 and 69 are not
//     offered either); and
//     share.version 1 when the broker runs share groups (KIP-932);
//   - a version we do not know is answered at v0 with UNSUPPORTED_VERSION and
//     ApiVersions' own range only (see decode), as Kafka's
//     ApiVersionsRequest.getErrorResponse, on a connection kept open, so the
//     client retries at our highest version (KIP-511);
//     TestApiVersionsKIP511RetryOnSameConnection sends a v4 flexible request;
//   - the response header is always v0 (KIP-511), even for flexible versions.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(18, 0, 3, handleApiVersions) }

func (s *Server) apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for _, k := range slices.Sorted(maps.Keys(apis)) {
		a := apis[k]
		if consumerProtocolKey(k) && !s.opts.ConsumerProtocol {
			continue
		}
		if shareKey(k) && s.shareBackend() == nil {
			continue
		}
		v := kmsg.NewApiVersionsResponseApiKey()
		v.ApiKey, v.MinVersion, v.MaxVersion = k, a.versions.min, s.maxVersion(k)
		resp.ApiKeys = append(resp.ApiKeys, v)
	}
	if tv := s.transactionVersion(); tv > 0 {
		// KIP-584 features (v3+ tagged fields): transaction.version, which
		// clients read to choose KIP-890's protocol. The epoch is fixed: the
		// feature is set once per cluster, at start.
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, 2
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, tv, tv
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		resp.FinalizedFeaturesEpoch = 1
	} else {
		resp.FinalizedFeaturesEpoch = -1
	}
	if s.opts.ConsumerProtocol {
		addGroupVersion(resp)
	}
	s.addShareVersion(resp)
	return resp
}

// transactionVersionFeature is Kafka's TransactionVersion.FEATURE_NAME.
const transactionVersionFeature = "transaction.version"

func handleApiVersions(s *Server, _ context.Context, hdr header, req kmsg.Request) reply {
	return now(s.apiVersionsResponse(hdr.version))
}
