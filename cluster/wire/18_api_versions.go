package wire

// ApiVersions: v0-3.
//
// Behaviour:
//   - answers with exactly the keys and versions registered in this package,
//     which are the ones really implemented;
//   - a version we do not know is answered at v0 with UNSUPPORTED_VERSION and
//     the table (see decode) on a connection kept open, so the client can
//     retry lower (KIP-511; Kafka's ApiVersionsRequest.getErrorResponse lists
//     only ApiVersions' own range, which the table includes);
//     TestApiVersionsKIP511RetryOnSameConnection sends a v4 flexible request;
//   - the response header is always v0 (KIP-511), even for flexible versions.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(18, 0, 3, handleApiVersions) }

func apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for _, k := range slices.Sorted(maps.Keys(apis)) {
		a := apis[k]
		v := kmsg.NewApiVersionsResponseApiKey()
		v.ApiKey, v.MinVersion, v.MaxVersion = k, a.versions.min, a.versions.max
		resp.ApiKeys = append(resp.ApiKeys, v)
	}
	return resp
}

func handleApiVersions(s *Server, _ context.Context, hdr header, req kmsg.Request) reply {
	return now(apiVersionsResponse(hdr.version))
}
