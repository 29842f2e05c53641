package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/payrecon/payrecon/postgres"
)

// version and revision may be stamped at build time with -ldflags "-X
// main.version=… -X main.revision=…" (scripts/image does, from git): a
// release tag, and the commit where Go stamps none (a build outside a git
// checkout, or in a git worktree, whose .git is a file Go does not follow).
// Otherwise both come from the build info.
var version, revision = "", ""

type versionCmd struct {
	JSON bool `help:"Print JSON."`
}

// buildInfo is what `payrecon version` reports.
type buildInfo struct {
	// Version is the module version (v1.2.3 when installed with go install
	// …@v1.2.3, a pseudo-version from a module proxy, "(devel)" when built
	// from a checkout), or the release tag stamped with -ldflags.
	Version string `json:"version"`
	// Module is the main module's path.
	Module string `json:"module"`
	// Revision, RevisionTime and Modified are the VCS stamp Go writes when
	// it builds from a checkout (-buildvcs, on by default): the commit, its
	// time, and whether the work tree had uncommitted changes.
	Revision     string `json:"revision,omitempty"`
	RevisionTime string `json:"revision_time,omitempty"`
	Modified     bool   `json:"modified,omitempty"`
	Go           string `json:"go"`
	// RiverSchemaVersion is the River migration payrecon's schema pins.
	RiverSchemaVersion int `json:"river_schema_version"`
}

// readBuildInfo reads the binary's build info (debug.ReadBuildInfo).
func readBuildInfo() buildInfo {
	info := buildInfo{Version: version, Go: runtime.Version(), RiverSchemaVersion: postgres.RiverSchemaVersion}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		info.Module = bi.Main.Path
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.RevisionTime = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Revision == "" {
		info.Revision = revision
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	return info
}

func (c *versionCmd) Run(a *app) error {
	info := readBuildInfo()
	if c.JSON {
		return a.printJSON(info)
	}
	rev := "no VCS revision"
	if info.Revision != "" {
		rev = "revision " + info.Revision
		if info.RevisionTime != "" {
			rev += " of " + info.RevisionTime
		}
		if info.Modified {
			rev += ", with uncommitted changes"
		}
	}
	fmt.Fprintf(a.stdout, "payrecon %s (%s; %s, River schema %d)\n", info.Version, rev, info.Go, info.RiverSchemaVersion)
	return nil
}
