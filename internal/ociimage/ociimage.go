// Package ociimage builds payrecon's container image with
// go-containerregistry (what ko and crane are made of), from scratch: one
// layer holding the static binary, CA certificates and a non-root user,
// and a config naming the entrypoint, the user, the ports and the OCI
// labels. It writes the image as an OCI layout and as a tarball that
// `docker load` and `podman load` read; nothing is pulled and no registry
// or daemon is involved. scripts/image drives it (internal/ociimage/imagetool).
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user and paths (deploy/kubernetes runs the pods as UID).
const (
	UID        = 65532
	GID        = 65532
	User       = "65532:65532"
	Entrypoint = "/usr/local/bin/payrecon"
	CACerts    = "/etc/ssl/certs/ca-certificates.crt"
)

// Ports the image declares: the public listener and the admin one.
var Ports = []string{"8080/tcp", "8081/tcp"}

// Config is what goes into the image.
type Config struct {
	// Binary is the static payrecon binary (CGO_ENABLED=0) for Arch.
	Binary string
	// CACerts is the PEM bundle of CA certificates to trust (Stripe's API
	// is HTTPS).
	CACerts string
	// Version and Revision are the release and the commit (the labels
	// org.opencontainers.image.version and .revision); Created is the
	// commit's time, so the same commit builds the same image.
	Version, Revision string
	Created           time.Time
	// Arch is the image's architecture (GOARCH); default runtime.GOARCH.
	Arch string
	// Source is the repository (org.opencontainers.image.source).
	Source string
}

// Build assembles the image.
func Build(cfg Config) (v1.Image, error) {
	if cfg.Arch == "" {
		cfg.Arch = runtime.GOARCH
	}
	bin, err := os.ReadFile(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("read the binary: %w", err)
	}
	certs, err := os.ReadFile(cfg.CACerts)
	if err != nil {
		return nil, fmt.Errorf("read the CA certificates: %w", err)
	}
	rootfs, err := rootFS(bin, certs, cfg.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(rootfs)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("make the layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: cfg.Created}, CreatedBy: "payrecon scripts/image", Comment: "payrecon, CA certificates, a non-root user"}})
	if err != nil {
		return nil, fmt.Errorf("add the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", cfg.Arch, v1.Time{Time: cfg.Created}
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.Cmd = []string{"run"}
	cf.Config.User = User
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=" + CACerts}
	cf.Config.ExposedPorts = map[string]struct{}{}
	for _, p := range Ports {
		cf.Config.ExposedPorts[p] = struct{}{}
	}
	cf.Config.Labels = Labels(cfg)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set the config: %w", err)
	}
	return img, nil
}

// Labels are the image's OCI annotations, as config labels.
func Labels(cfg Config) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "payrecon",
		"org.opencontainers.image.description": "Keeps a PostgreSQL payments table honest against Stripe",
		"org.opencontainers.image.version":     cfg.Version,
		"org.opencontainers.image.revision":    cfg.Revision,
		"org.opencontainers.image.created":     cfg.Created.UTC().Format(time.RFC3339),
	}
	if cfg.Source != "" {
		l["org.opencontainers.image.source"] = cfg.Source
	}
	return l
}

// rootFS is the layer's tar: the binary, the certificates, passwd and
// group with the non-root user, its home and /tmp, each stamped with
// created (reproducible).
func rootFS(bin, certs []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(path string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: created, Format: tar.FormatPAX})
	}
	file := func(path string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: mode, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/ssl", 0o755, 0) },
		func() error { return dir("etc/ssl/certs", 0o755, 0) },
		func() error { return file(CACerts[1:], 0o644, certs) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, UID) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/local", 0o755, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0) },
		func() error { return file(Entrypoint[1:], 0o755, bin) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, fmt.Errorf("write the layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("write the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// Write writes img into dir as an OCI layout (dir/oci, the image's index
// annotated with tag) and a tarball (dir/payrecon-<version>-<arch>.tar,
// tagged ref), replacing earlier ones. It returns the tarball's path.
func Write(img v1.Image, dir, ref, arch string) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	ociDir := filepath.Join(dir, "oci")
	if err := os.RemoveAll(ociDir); err != nil {
		return "", err
	}
	p, err := layout.Write(ociDir, empty.Index)
	if err != nil {
		return "", fmt.Errorf("write the OCI layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.TagStr()}),
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: arch})); err != nil {
		return "", fmt.Errorf("write the OCI layout: %w", err)
	}
	tarPath := filepath.Join(dir, fmt.Sprintf("payrecon-%s-%s.tar", tag.TagStr(), arch))
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		return "", fmt.Errorf("write the tarball: %w", err)
	}
	return tarPath, nil
}
