// Command imagetool builds payrecon's container image into a folder, as an
// OCI layout and a tarball (scripts/image runs it; see package ociimage).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/payrecon/payrecon/internal/ociimage"
)

func main() {
	var (
		cfg     ociimage.Config
		out     = flag.String("out", "dist", "folder to write the OCI layout (oci/) and the tarball into")
		ref     = flag.String("ref", "", "the tarball's image reference (default payrecon:<version>)")
		created = flag.String("created", "", "the image's creation time, RFC 3339 (the commit's time; default now)")
	)
	flag.StringVar(&cfg.Binary, "binary", "", "the static payrecon binary (CGO_ENABLED=0)")
	flag.StringVar(&cfg.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the PEM bundle of CA certificates to ship")
	flag.StringVar(&cfg.Version, "version", "devel", "the version label")
	flag.StringVar(&cfg.Revision, "revision", "", "the revision label (a commit)")
	flag.StringVar(&cfg.Arch, "arch", "", "the image's architecture (default this machine's)")
	flag.StringVar(&cfg.Source, "source", "https://github.com/payrecon/payrecon", "the source label")
	flag.Parse()
	if err := run(cfg, *out, *ref, *created); err != nil {
		fmt.Fprintln(os.Stderr, "imagetool:", err)
		os.Exit(1)
	}
}

func run(cfg ociimage.Config, out, ref, created string) error {
	if cfg.Binary == "" {
		return fmt.Errorf("-binary is required")
	}
	cfg.Created = time.Now().UTC().Truncate(time.Second)
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		cfg.Created = t.UTC()
	}
	if ref == "" {
		ref = "payrecon:" + cfg.Version
	}
	img, err := ociimage.Build(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	arch := cfg.Arch
	if arch == "" {
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		arch = cf.Architecture
	}
	path, err := ociimage.Write(img, out, ref, arch)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s\n%s/oci (OCI layout)\nimage %s, digest %s\n", path, out, ref, digest)
	return nil
}
