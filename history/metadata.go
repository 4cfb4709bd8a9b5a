package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// metadata.jsonl: the topic's partition state as the cluster reported it
// during a run, one JSON object per line, written by the harness's sampler
// (harness/metadata.go) and drawn by the run report. It is a record of what
// brokers answered, not of what was true: a broker cut off from the
// controller answers with the metadata it last had, so every sample names
// the broker that answered.

// MetadataSample is one line of metadata.jsonl.
type MetadataSample struct {
	// Time is when the answer arrived (or the sample gave up), in ns since
	// the test epoch, the clock of the history's time field.
	Time int64 `json:"time"`
	// Broker answered this sample; -1 when no broker did (Error is set).
	Broker int32 `json:"broker"`
	// Controller is the controller id the answering broker named.
	Controller int32 `json:"controller"`
	// Partitions of the topic, sorted by partition; empty when Error or
	// TopicError is set.
	Partitions []PartitionState `json:"partitions,omitempty"`
	// TopicError is the topic-level error code's name the broker answered
	// (e.g. UNKNOWN_TOPIC_OR_PARTITION from a broker whose image is empty).
	TopicError string `json:"topic_error,omitempty"`
	// Failed are the brokers asked before the one that answered, in order,
	// and why each did not answer.
	Failed []MetadataAttempt `json:"failed,omitempty"`
	// Error is set when no broker answered within the sample's budget.
	Error string `json:"error,omitempty"`
}

// PartitionState is one partition in a sample, as Metadata reports it.
type PartitionState struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"` // -1: no leader
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offline,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// MetadataAttempt is a broker that did not answer a sample.
type MetadataAttempt struct {
	Broker int32  `json:"broker"`
	Error  string `json:"error"`
}

// MaxMetadataSamples bounds what ReadMetadataFile keeps: a day-long run
// sampled four times a second. Beyond it the rest is dropped with a warning.
const MaxMetadataSamples = 400_000

// maxMetadataLine bounds one line (a sample of a topic with thousands of
// partitions is far below it).
const maxMetadataLine = 16 << 20

// ReadMetadata reads metadata.jsonl by ReadRun's policy: a truncated last
// line (the harness crashed mid-write) is dropped with a warning; any other
// unreadable line is a *ParseError naming it.
func ReadMetadata(r io.Reader) (samples []MetadataSample, warnings []string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var full []byte
	for line := 1; ; line++ {
		full = full[:0]
		var rerr error
		for {
			var b []byte
			b, rerr = br.ReadSlice('\n')
			full = append(full, b...)
			if rerr != bufio.ErrBufferFull {
				break
			}
			if len(full) > maxMetadataLine {
				return samples, warnings, &ParseError{Line: line, Msg: fmt.Sprintf("longer than %d bytes", maxMetadataLine)}
			}
		}
		if rerr != nil && rerr != io.EOF {
			return samples, warnings, rerr
		}
		last := rerr == io.EOF
		if t := bytes.TrimSpace(full); len(t) > 0 {
			var s MetadataSample
			if err := json.Unmarshal(t, &s); err != nil {
				if last && full[len(full)-1] != '\n' {
					warnings = append(warnings, fmt.Sprintf("line %d: truncated last line dropped (the run stopped mid-write)", line))
					return samples, warnings, nil
				}
				return samples, warnings, &ParseError{Line: line, Msg: err.Error()}
			}
			if len(samples) == MaxMetadataSamples {
				warnings = append(warnings, fmt.Sprintf("line %d: more than %d samples; the rest dropped", line, MaxMetadataSamples))
				return samples, warnings, nil
			}
			samples = append(samples, s)
		}
		if last {
			return samples, warnings, nil
		}
	}
}

// ReadMetadataFile reads a metadata.jsonl file; its errors and warnings
// name the file. A missing file is an error that satisfies errors.Is(err,
// fs.ErrNotExist): runs recorded before the sampler existed have none.
func ReadMetadataFile(path string) ([]MetadataSample, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	s, w, err := ReadMetadata(f)
	w, err = inFile(path, w, err)
	return s, w, err
}
