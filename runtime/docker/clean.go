package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"gregor/internal/sleep"
	"gregor/runtime"
)

// Filter narrows Clean. The zero value matches everything gregor made.
type Filter struct {
	Cluster string // only this cluster name
	Run     string // only this run id
	Images  bool   // also remove gregor-built images
}

// Removed lists what Clean removed, by name.
type Removed struct {
	Containers []string
	Networks   []string
	Images     []string
}

// Empty reports whether nothing was removed.
func (r Removed) Empty() bool {
	return len(r.Containers) == 0 && len(r.Networks) == 0 && len(r.Images) == 0
}

// Bounds on cleanup: passes over the container list (a create that raced a
// cancellation can land after the first list) and retries of a network
// removal the engine refuses while endpoints are being torn down.
const (
	containerPasses = 3
	networkTries    = 10
	// othersRemovalTries bounds the wait for a container another cleaner
	// is removing (an engine under load takes seconds).
	othersRemovalTries = 150
	cleanPause         = 200 * time.Millisecond
)

// Clean removes every container and network (and, with f.Images, image)
// carrying gregor's labels and matching f: what a crashed run left behind.
func Clean(ctx context.Context, f Filter) (Removed, error) {
	cli, err := newClient()
	if err != nil {
		return Removed{}, err
	}
	defer cli.Close()
	if err := ping(ctx, cli); err != nil {
		return Removed{}, err
	}
	return removeLabelled(ctx, cli, f)
}

func (f Filter) args() filters.Args {
	a := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	if f.Cluster != "" {
		a.Add("label", LabelCluster+"="+f.Cluster)
	}
	if f.Run != "" {
		a.Add("label", LabelRun+"="+f.Run)
	}
	return a
}

func removeLabelled(ctx context.Context, cli *client.Client, f Filter) (Removed, error) {
	var out Removed
	var errs []error
	removing := map[string]bool{} // being removed by another cleaner
	for pass := 0; pass < containerPasses; pass++ {
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f.args()})
		if err != nil {
			return out, fmt.Errorf("list containers: %w", err)
		}
		if len(list) == 0 {
			break
		}
		for _, ct := range list {
			err := cli.ContainerRemove(ctx, ct.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
			if errdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress") {
				// Another cleaner (a reaper, a second `gregor clean`) is
				// removing it: the next pass sees it gone, or fails on it.
				removing[ct.ID] = true
				continue
			}
			if err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove container %s: %w", ct.ID[:12], err))
				continue
			}
			delete(removing, ct.ID)
			name := ct.ID[:12]
			if len(ct.Names) > 0 {
				name = strings.TrimPrefix(ct.Names[0], "/")
			}
			out.Containers = append(out.Containers, name)
		}
		if pass < containerPasses-1 {
			sleep.For(ctx, cleanPause)
		}
	}
	// Wait out the other cleaner's removals, bounded: the network goes only
	// once its containers are gone.
	for id := range removing {
		gone := false
		for try := 0; try < othersRemovalTries && !gone; try++ {
			_, err := cli.ContainerInspect(ctx, id)
			if gone = errdefs.IsNotFound(err); !gone {
				sleep.For(ctx, cleanPause)
			}
		}
		if !gone {
			errs = append(errs, fmt.Errorf("container %s: another clean-up was removing it, and it is still there after %v", id[:12], othersRemovalTries*cleanPause))
		}
	}
	nets, err := cli.NetworkList(ctx, dnetwork.ListOptions{Filters: f.args()})
	if err != nil {
		return out, errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, nw := range nets {
		var err error
		for try := 0; try < networkTries; try++ {
			if err = cli.NetworkRemove(ctx, nw.ID); err == nil || errdefs.IsNotFound(err) {
				err = nil
				break
			}
			sleep.For(ctx, cleanPause)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %w", nw.Name, err))
			continue
		}
		out.Networks = append(out.Networks, nw.Name)
	}
	if f.Images {
		imgs, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))})
		if err != nil {
			return out, errors.Join(append(errs, fmt.Errorf("list images: %w", err))...)
		}
		for _, im := range imgs {
			if _, err := cli.ImageRemove(ctx, im.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove image %s: %w", im.ID, err))
				continue
			}
			name := im.ID
			if len(im.RepoTags) > 0 {
				name = strings.Join(im.RepoTags, ",")
			}
			out.Images = append(out.Images, name)
		}
	}
	return out, errors.Join(errs...)
}

// reaperKind names the docker runtime's reaper (runtime.StartReaper).
const reaperKind = "docker"

// Reap passes: a reaper may start its work while creates the dead harness
// sent are still running at the engine, so it lists the run's objects until
// it has found none reapQuietPasses times in a row, reapPause apart.
const (
	reapPasses      = 20
	reapQuietPasses = 3
	reapPause       = time.Second
)

// reap removes everything of one run (the job is its run id) after the
// harness that made it died without cleaning up.
func reap(ctx context.Context, runID string) error {
	if runID == "" {
		return errors.New("reaper started without a run id")
	}
	cli, err := newClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	var last error
	for pass, quiet := 0, 0; pass < reapPasses && quiet < reapQuietPasses; pass++ {
		removed, err := removeLabelled(ctx, cli, Filter{Run: runID})
		if last = err; err == nil && removed.Empty() {
			quiet++
		} else {
			quiet = 0
		}
		sleep.For(ctx, reapPause)
	}
	return last
}

func init() { runtime.ServeReaper(reaperKind, reap) }
