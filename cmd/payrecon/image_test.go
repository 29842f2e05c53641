package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/payrecon/payrecon/internal/ociimage"
)

// imageUID is the image's user, which deploy/kubernetes runs the pods as.
const imageUID = ociimage.UID

// The container image as scripts/image writes it (its second step, the
// image tool, on the test's static binary): the tarball docker and podman
// load has the entrypoint, the non-root user, the ports and the labels;
// its one layer holds a static binary that runs `version` and reports the
// stamped version and revision, the CA certificates and the user; the OCI
// layout holds the same image.
func TestImage(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	out := t.TempDir()
	tool := exec.Command("go", "run", "../../internal/ociimage/imagetool", "-binary", bin, "-out", out,
		"-version", testVersion, "-revision", testRevision, "-created", "2026-12-01T00:00:00Z", "-arch", runtime.GOARCH)
	if b, err := tool.CombinedOutput(); err != nil {
		t.Fatalf("imagetool: %v\n%s", err, b)
	}
	tarPath := filepath.Join(out, "payrecon-"+testVersion+"-"+runtime.GOARCH+".tar")
	tag, err := name.NewTag("payrecon:" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatalf("open the tarball: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/payrecon"}) || !slices.Equal(c.Cmd, []string{"run"}) {
		t.Errorf("entrypoint %v, cmd %v; want /usr/local/bin/payrecon run", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" || cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("user %q, platform %s/%s", c.User, cf.OS, cf.Architecture)
	}
	for _, p := range []string{"8080/tcp", "8081/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("port %s not exposed: %v", p, c.ExposedPorts)
		}
	}
	for k, want := range map[string]string{"org.opencontainers.image.version": testVersion, "org.opencontainers.image.revision": testRevision,
		"org.opencontainers.image.created": "2026-12-01T00:00:00Z", "org.opencontainers.image.title": "payrecon"} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	var payrecon, passwd []byte
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		switch h.Name {
		case "usr/local/bin/payrecon":
			payrecon, err = io.ReadAll(tr)
		case "etc/passwd":
			passwd, err = io.ReadAll(tr)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if h := files["usr/local/bin/payrecon"]; h == nil || h.Mode&0o111 == 0 {
		t.Fatalf("no executable /usr/local/bin/payrecon in the layer: %v", files)
	}
	if h := files["etc/ssl/certs/ca-certificates.crt"]; h == nil || h.Size == 0 {
		t.Error("no CA certificates in the layer")
	}
	if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", passwd)
	}
	// The binary runs from the layer alone: static, no interpreter.
	f, err := elf.NewFile(bytes.NewReader(payrecon))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked: it cannot run in an image from scratch")
		}
	}
	exe := filepath.Join(t.TempDir(), "payrecon")
	if err := os.WriteFile(exe, payrecon, 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := exec.Command(exe, "version", "--json").Output()
	if err != nil {
		t.Fatalf("payrecon version from the layer: %v", err)
	}
	var info struct{ Version, Revision, Module string }
	if err := json.Unmarshal(v, &info); err != nil || info.Version != testVersion || info.Revision != testRevision || info.Module != "github.com/payrecon/payrecon" {
		t.Errorf("payrecon version: %s (%v)", v, err)
	}
	// The OCI layout holds the same image, named by its tag.
	p, err := layout.FromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Fatalf("the OCI layout's index: %+v, %v", im, err)
	}
	li, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball keeps the config and the layers; its manifest is
	// rebuilt on load, so compare what it keeps.
	got, _ := li.ConfigName()
	want, _ := img.ConfigName()
	if got != want {
		t.Errorf("the layout's image config %s is not the tarball's %s", got, want)
	}
}
