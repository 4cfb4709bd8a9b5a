package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gregor/internal/atomicfile"
	"gregor/runtime"
)

func init() { subcommands = append(subcommands, nodeCmd) }

// A cluster `gregor up --name NAME` keeps up is controlled from other
// processes (a fault file of `gregor run --runtime external`, a shell)
// through a unix socket in its control directory, beside cluster.json,
// which says where every node listens and its pid.
const (
	controlFile   = "cluster.json"
	controlSocket = "control.sock"
)

// controlDir is where `gregor up --name NAME` keeps its control files.
func controlDir(name string) string {
	return filepath.Join(os.TempDir(), "gregor-control", name)
}

// nodeVerbs are what `gregor node` can do to a node of an up cluster.
var nodeVerbs = []string{"kill", "stop", "start", "pause", "resume", "isolate", "heal", "pid"}

// upState is cluster.json.
type upState struct {
	Name      string      `json:"name"`
	Runtime   string      `json:"runtime"`
	Bootstrap []string    `json:"bootstrap"`
	Control   string      `json:"control"` // the unix socket
	Nodes     []upNodeRow `json:"nodes"`
}

type upNodeRow struct {
	ID             int32  `json:"id"`
	Kafka          string `json:"kafka"`
	Pid            int    `json:"pid,omitempty"`
	ControllerOnly bool   `json:"controller_only,omitempty"`
}

// pider is a cluster whose nodes are local processes (runtime/process).
type pider interface{ Pid(id int32) int }

func snapshot(name, rtName, sock string, cl runtime.Cluster) upState {
	st := upState{Name: name, Runtime: rtName, Bootstrap: cl.Bootstrap(), Control: sock}
	for _, n := range cl.Nodes() {
		row := upNodeRow{ID: n.ID, Kafka: n.KafkaAddr, ControllerOnly: n.ControllerOnly}
		if p, ok := cl.(pider); ok {
			row.Pid = p.Pid(n.ID)
		}
		st.Nodes = append(st.Nodes, row)
	}
	return st
}

// checkNotUp refuses a name another `gregor up` serves.
func checkNotUp(name string) error {
	sock := filepath.Join(controlDir(name), controlSocket)
	if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("a cluster named %s is already up (%s answers): give --name another name", name, sock)
	}
	return nil
}

// serveControl writes cluster.json and serves the node verbs on the
// control socket until ctx ends; it removes both then.
func serveControl(ctx context.Context, name, rtName string, cl runtime.Cluster) (string, func(), error) {
	dir := controlDir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	sock := filepath.Join(dir, controlSocket)
	if err := checkNotUp(name); err != nil {
		return "", nil, err
	}
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return "", nil, err
	}
	writeState := func() error {
		b, _ := json.MarshalIndent(snapshot(name, rtName, sock, cl), "", "  ")
		return atomicfile.WriteFile(filepath.Join(dir, controlFile), append(b, '\n'), 0o644)
	}
	if err := writeState(); err != nil {
		ln.Close()
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cluster", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(snapshot(name, rtName, sock, cl))
	})
	mux.HandleFunc("POST /node/{id}/{verb}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
		if err != nil {
			http.Error(w, "node id: "+err.Error(), http.StatusBadRequest)
			return
		}
		out, err := nodeVerb(r.Context(), cl, int32(id), r.PathValue("verb"), r.URL.Query().Get("from"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		writeState() // pids change on start
		io.WriteString(w, out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		os.RemoveAll(dir)
	}
	return dir, stop, nil
}

// nodeVerb does verb to node id of cl; isolate cuts it off from the nodes
// in from (comma-separated ids; empty: every other node).
func nodeVerb(ctx context.Context, cl runtime.Cluster, id int32, verb, from string) (string, error) {
	known := false
	for _, n := range cl.Nodes() {
		known = known || n.ID == id
	}
	if !known {
		return "", fmt.Errorf("no node %d in cluster %s", id, cl.Name())
	}
	switch verb {
	case "kill":
		return "", cl.Kill(ctx, id)
	case "stop":
		return "", cl.Stop(ctx, id, 10*time.Second)
	case "start":
		return "", cl.Start(ctx, id)
	case "pause":
		return "", cl.Pause(ctx, id)
	case "resume":
		return "", cl.Resume(ctx, id)
	case "heal":
		return "", cl.Heal(ctx)
	case "isolate":
		var others []int32
		if from == "" {
			for _, n := range cl.Nodes() {
				if n.ID != id {
					others = append(others, n.ID)
				}
			}
		} else {
			for _, f := range strings.Split(from, ",") {
				o, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
				if err != nil {
					return "", fmt.Errorf("--from %q: give node ids, comma-separated", from)
				}
				others = append(others, int32(o))
			}
		}
		return "", cl.Partition(ctx, [][]int32{{id}, others})
	case "pid":
		p, ok := cl.(pider)
		if !ok {
			return "", fmt.Errorf("cluster %s runs on no local process (pids are the process runtime's)", cl.Name())
		}
		pid := p.Pid(id)
		if pid == 0 {
			return "", fmt.Errorf("node %d is not running", id)
		}
		return strconv.Itoa(pid) + "\n", nil
	}
	return "", fmt.Errorf("unknown verb %q: give one of %s", verb, strings.Join(nodeVerbs, ", "))
}

func nodeCmd() *cobra.Command {
	var (
		name string
		from string
	)
	cmd := &cobra.Command{
		Use:   "node VERB ID --cluster NAME",
		Short: "Kill, stop, start, pause, resume, isolate or heal a node of a `gregor up --name NAME` cluster; pid prints its process id",
		Long: `gregor node acts on a node of a cluster that ` + "`gregor up --name NAME`" + ` keeps up in
another process, through its control socket (` + controlDir("NAME") + `/control.sock;
cluster.json beside it lists every node's address and pid). Verbs: ` + strings.Join(nodeVerbs, ", ") + `.
isolate cuts the node off from --from (default: every other node); heal removes
every partition and slow link of the cluster. It is what the fault commands of
` + "`gregor run --runtime external --faults FILE`" + ` call for such a cluster, e.g.
  kill: "kill -9 $(gregor node pid {{.NodeID}} --cluster demo)"
  start: "gregor node start {{.NodeID}} --cluster demo"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			verb := args[0]
			id, err := strconv.ParseInt(args[1], 10, 32)
			if err != nil {
				return &exitError{checkBadInput, fmt.Errorf("node id %q: give a number", args[1])}
			}
			sock := filepath.Join(controlDir(name), controlSocket)
			hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "unix", sock)
				}}}
			u := fmt.Sprintf("http://gregor/node/%d/%s", id, verb)
			if from != "" {
				u += "?from=" + from
			}
			resp, err := hc.Post(u, "text/plain", nil)
			if err != nil {
				var ne *net.OpError
				if errors.As(err, &ne) {
					return &exitError{checkBadInput, fmt.Errorf("no cluster %s is up (%s does not answer): start one with gregor up --name %s", name, sock, name)}
				}
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("node %d %s: %s", id, verb, strings.TrimSpace(string(body)))
			}
			cmd.OutOrStdout().Write(body)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "cluster", "up", "the cluster's --name in gregor up")
	cmd.Flags().StringVar(&from, "from", "", "isolate: the node ids to cut it off from, comma-separated (default: every other node)")
	return cmd
}
