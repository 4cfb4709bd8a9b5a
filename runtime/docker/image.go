package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
)

// dockerfile builds the node image from nothing but the binary: no base image,
// so no registry is reached. WORKDIR creates the data directory.
const dockerfile = `FROM scratch
COPY gregor ` + binPath + `
WORKDIR ` + DataDir + `
ENTRYPOINT ["` + binPath + `"]
`

// MaxBinary bounds the binary read into memory for the build context.
const MaxBinary = 512 << 20

// ImageTag is the tag an image for this binary gets: gregor:<hash of the
// binary and the Dockerfile>. Equal binaries share one image.
func ImageTag(binary []byte) string {
	h := sha256.New()
	h.Write([]byte(dockerfile))
	h.Write(binary)
	return "gregor:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// readStatic reads the binary and refuses a dynamically linked one: a
// FROM-scratch image has no loader or libc.
func readStatic(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("gregor binary: %w (build one with `make build`)", err)
	}
	if st.Size() > MaxBinary {
		return nil, fmt.Errorf("gregor binary %s is %d bytes, over %d", path, st.Size(), MaxBinary)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gregor binary: %w", err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gregor binary %s is not a Linux ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("gregor binary %s is dynamically linked: rebuild it with CGO_ENABLED=0 (make build)", path)
		}
	}
	return b, nil
}

// EnsureImage returns the tag of the image holding binaryPath, building it
// only if no image has that tag yet. built says whether it built.
func (r *Runtime) EnsureImage(ctx context.Context, binaryPath string) (tag string, built bool, err error) {
	bin, err := readStatic(binaryPath)
	if err != nil {
		return "", false, err
	}
	cli, err := newClient()
	if err != nil {
		return "", false, err
	}
	defer cli.Close()
	tag = ImageTag(bin)
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, false, nil
	} else if !errdefs.IsNotFound(err) {
		return "", false, fmt.Errorf("inspect image %s: %w", tag, err)
	}
	if err := buildImage(ctx, cli, tag, bin); err != nil {
		return "", false, err
	}
	r.logf("built image %s", tag)
	return tag, true, nil
}

func buildImage(ctx context.Context, cli *client.Client, tag string, bin []byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {"gregor", 0o755, bin}}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		Labels:      map[string]string{LabelManaged: "true"},
		Version:     build.BuilderV1,
	})
	if err != nil {
		return fmt.Errorf("build image %s: %w", tag, err)
	}
	defer resp.Body.Close()
	// The build reports failure in the JSON stream, not the HTTP status.
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("build image %s: reading progress: %w", tag, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("build image %s: %s", tag, msg.Error)
		}
	}
}
