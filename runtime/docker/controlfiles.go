package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"

	"gregor/cluster/faultpoint"
	"gregor/cluster/nodefault"
	"gregor/runtime"
)

// The brokers' control channels (cluster/faultpoint's and
// cluster/nodefault's files in the node's data directory, which the broker
// polls) reach a container through the engine's archive API: the harness
// copies a one-file tar archive into the container's DataDir and copies the
// events file out. Nothing in the FROM-scratch image is needed (no shell,
// no tool), and a stopped container takes the copy as a running one does,
// so a point stays armed across the crash it causes, as on the process
// runtime.
//
// The extraction is not an atomic rename (the process runtime's is): a
// broker polling mid-copy reads a short file, which does not decode, keeps
// what it had armed and reads again at its next poll (faultpoint.Watch,
// nodefault.Watch).

var (
	_ runtime.FaultPointer = (*Cluster)(nil)
	_ runtime.NodeFaulter  = (*Cluster)(nil)
)

// copyTimeout bounds one copy in or out of a container.
const copyTimeout = 20 * time.Second

// FaultPoints says the docker runtime arms fault points
// (runtime.CheckFaultPoints); a foreign image has none (runtime.IsForeign).
func (r *Runtime) FaultPoints() bool { return r.opts.Foreign == nil }

// NodeFaults says the docker runtime arms disk and clock faults
// (runtime.CheckNodeFaults); a foreign image has none.
func (r *Runtime) NodeFaults() bool { return r.opts.Foreign == nil }

// ArmFaultPoints implements runtime.FaultPointer: node id's control file
// replaced whole.
func (c *Cluster) ArmFaultPoints(ctx context.Context, id int32, arms []faultpoint.Arm) error {
	b, err := faultpoint.EncodeControl(faultpoint.Control{Arms: arms})
	if err != nil {
		return err
	}
	return c.putFile(ctx, id, faultpoint.FileName, b)
}

// FaultPointFirings implements runtime.FaultPointer: node id's firings
// file, copied out.
func (c *Cluster) FaultPointFirings(ctx context.Context, id int32) ([]faultpoint.Firing, error) {
	b, err := c.getFile(ctx, id, faultpoint.FiringsName)
	if err != nil {
		return nil, err
	}
	return faultpoint.ParseFirings(b)
}

// ArmNodeFaults implements runtime.NodeFaulter: node id's control file
// replaced whole.
func (c *Cluster) ArmNodeFaults(ctx context.Context, id int32, nc nodefault.Control) error {
	b, err := nodefault.EncodeControl(nc)
	if err != nil {
		return err
	}
	return c.putFile(ctx, id, nodefault.FileName, b)
}

// NodeFaultEvents implements runtime.NodeFaulter: node id's events file,
// copied out.
func (c *Cluster) NodeFaultEvents(ctx context.Context, id int32) ([]nodefault.Event, error) {
	b, err := c.getFile(ctx, id, nodefault.EventsName)
	if err != nil {
		return nil, err
	}
	return nodefault.ParseEvents(b)
}

// putFile writes b as DataDir/name in node id's container.
func (c *Cluster) putFile(ctx context.Context, id int32, name string, b []byte) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	buf, err := tarOf(tarEntry{name: name, mode: 0o644, body: b})
	if err != nil {
		return err
	}
	if err := c.copyIn(ctx, n, DataDir, buf); err != nil {
		return fmt.Errorf("node %d: writing %s into its container: %w", id, path.Join(DataDir, name), err)
	}
	return nil
}

// tarEntry is one member of an archive CopyToContainer unpacks: a file,
// or with dir a directory.
type tarEntry struct {
	name string
	mode int64
	body []byte
	dir  bool
}

// tarOf is the archive of entries, in order.
func tarOf(entries ...tarEntry) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), ModTime: time.Now(), Typeflag: tar.TypeReg}
		if e.dir {
			hdr.Name, hdr.Size, hdr.Typeflag = e.name+"/", 0, tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	return &buf, tw.Close()
}

// copyIn unpacks an archive at dst in n's container, within copyTimeout.
func (c *Cluster) copyIn(ctx context.Context, n *node, dst string, buf *bytes.Buffer) error {
	ctx, cancel := context.WithTimeout(ctx, copyTimeout)
	defer cancel()
	return c.cli.CopyToContainer(ctx, n.containerID, dst, buf, container.CopyToContainerOptions{})
}

// putNodeFiles copies the cluster's files into node n's container, made
// but not yet started, as FilesDir/NAME: readable by its root user only
// (a password file, a CA's key), and in one archive, so a node never sees
// part of them.
func (c *Cluster) putNodeFiles(ctx context.Context, n *node, files []runtime.File) error {
	if len(files) == 0 {
		return nil
	}
	dir := strings.TrimPrefix(FilesDir, "/")
	entries := []tarEntry{{name: dir, mode: 0o700, dir: true}}
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return fmt.Errorf("node %d: file %s for its container: %w", n.info.ID, f.Name, err)
		}
		entries = append(entries, tarEntry{name: path.Join(dir, f.Name), mode: 0o600, body: b})
	}
	buf, err := tarOf(entries...)
	if err != nil {
		return err
	}
	if err := c.copyIn(ctx, n, "/", buf); err != nil {
		return fmt.Errorf("node %d: copying its files into %s: %w", n.info.ID, FilesDir, err)
	}
	return nil
}

// maxEventsFile bounds a file copied out: an events file holds a line per
// firing or flip, a few hundred bytes each.
const maxEventsFile = 16 << 20

// getFile reads DataDir/name from node id's container; a file not there
// (nothing fired yet) reads empty.
func (c *Cluster) getFile(ctx context.Context, id int32, name string) ([]byte, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, copyTimeout)
	defer cancel()
	src := path.Join(DataDir, name)
	rc, _, err := c.cli.CopyFromContainer(ctx, n.containerID, src)
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node %d: reading %s from its container: %w", id, src, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("node %d: reading %s from its container: %w", id, src, err)
	}
	b, err := io.ReadAll(io.LimitReader(tr, maxEventsFile+1))
	if err == nil && len(b) > maxEventsFile {
		err = errors.New("larger than " + fmt.Sprint(maxEventsFile) + " bytes")
	}
	if err != nil {
		return nil, fmt.Errorf("node %d: reading %s from its container: %w", id, src, err)
	}
	return b, nil
}
