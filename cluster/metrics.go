package cluster

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"gregor/cluster/meta"
)

// Metrics are served as Prometheus text at GET /metrics, named as the JMX
// exporter names Kafka's MBeans (kafka.server:type=ReplicaManager,
// name=UnderReplicatedPartitions becomes
// kafka_server_replicamanager_underreplicatedpartitions), so dashboards and
// alerts written for Kafka read them unchanged.
func (b *Broker) serveMetrics(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		b.writeMetrics(w)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		srv.Serve(ln)
	}()
	go func() {
		defer b.wg.Done()
		<-b.stop
		srv.Close()
	}()
	b.metricsAddr = ln.Addr().String()
	return nil
}

// MetricsAddr is where /metrics is served ("" when not).
func (b *Broker) MetricsAddr() string { return b.metricsAddr }

func gauge(w io.Writer, name, help string, v int64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
}

func counter(w io.Writer, name, help string, v int64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
}

func (b *Broker) writeMetrics(w io.Writer) {
	var under, underMin, leaders, parts int64
	type lag struct {
		topic     string
		partition int32
		replica   int32
		lag       int64
	}
	var lags []lag
	for _, p := range b.snapshotPartitions() {
		parts++
		st := p.State()
		if st.Leader != b.cfg.NodeID {
			continue
		}
		leaders++
		if len(st.ISR) < len(st.Replicas) {
			under++
		}
		if len(st.ISR) < p.MinISR() {
			underMin++
		}
		for r, l := range p.FollowerLag() {
			lags = append(lags, lag{p.Topic, p.Index, r, l})
		}
	}
	im := b.Image()
	var offline int64
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Leader == meta.NoLeader {
				offline++
			}
		}
	}
	gauge(w, "kafka_server_replicamanager_underreplicatedpartitions", "UnderReplicatedPartitions: partitions led here whose ISR is smaller than the replica set", under)
	gauge(w, "kafka_server_replicamanager_underminisrpartitioncount", "UnderMinIsrPartitionCount: partitions led here whose ISR is below min.insync.replicas", underMin)
	gauge(w, "kafka_controller_kafkacontroller_offlinepartitionscount", "OfflinePartitionsCount: partitions with no leader, in this broker's metadata", offline)
	gauge(w, "kafka_server_replicamanager_leadercount", "LeaderCount: partitions led here", leaders)
	gauge(w, "kafka_server_replicamanager_partitioncount", "PartitionCount: replicas hosted here", parts)
	counter(w, "kafka_server_replicamanager_isrshrinks_total", "IsrShrinksPerSec as a counter: ISR shrinks of partitions led here", b.stats.ISRShrinks.Load())
	counter(w, "kafka_server_replicamanager_isrexpands_total", "IsrExpandsPerSec as a counter: ISR expansions of partitions led here", b.stats.ISRExpands.Load())
	slices.SortFunc(lags, func(a, b lag) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition), cmp.Compare(a.replica, b.replica))
	})
	const lagName = "kafka_server_replicafetchermanager_replicalag"
	fmt.Fprintf(w, "# HELP %s ReplicaFetcherLag seen from the leader: offsets a follower is behind the leader's LEO\n# TYPE %s gauge\n", lagName, lagName)
	for _, l := range lags {
		fmt.Fprintf(w, "%s{topic=%q,partition=\"%d\",replica=\"%d\"} %d\n", lagName, l.topic, l.partition, l.replica, l.lag)
	}
}
