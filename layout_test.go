package payrecon_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/payrecon/payrecon"

// listedPackage is what the layout tests read of `go list -json`.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList lists the module's packages with their imports and dependencies.
func goList(t *testing.T) []listedPackage {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the packages with")
	}
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no packages")
	}
	return pkgs
}

// rel is a package's path inside the module ("" for the root).
func rel(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

// The import graph has no arrow from an adapter to the console (the
// console's read models are package readmodel's), and none from one
// service to another, except the Connect platform's, which schedules
// each account's sweep batches and catch-up rounds as River jobs and so
// drives both (it is the orchestrator of those two services, not a third
// one beside them).
func TestImportGraph(t *testing.T) {
	t.Parallel()
	adapters := []string{"postgres", "stripeapi", "httpapi"}
	services := []string{"sweep", "catchup", "relay", "settlement", "platform"}
	allowed := map[[2]string]bool{{"platform", "sweep"}: true, {"platform", "catchup"}: true}
	seen := map[string]bool{}
	for _, p := range goList(t) {
		from := rel(p.ImportPath)
		seen[from] = true
		if slices.Contains(adapters, from) {
			for _, d := range p.Deps {
				if rel(d) == "console" && strings.HasPrefix(d, module) {
					t.Errorf("adapter %s depends on the console", from)
				}
			}
		}
		if slices.Contains(services, from) {
			for _, imp := range p.Imports {
				to := rel(imp)
				if strings.HasPrefix(imp, module+"/") && slices.Contains(services, to) && !allowed[[2]string{from, to}] {
					t.Errorf("service %s imports service %s", from, to)
				}
			}
		}
	}
	for _, p := range append(adapters, services...) {
		if !seen[p] {
			t.Errorf("package %s is not in the module any more: update this test", p)
		}
	}
}

// The README's Layout section names every package `go list ./...` prints
// (as `path/`, the root as `payrecon`), so the map cannot drift from the
// code; doc.go points to it.
func TestREADMELayoutNamesEveryPackage(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "\n## Layout\n")
	if i < 0 {
		t.Fatal("README.md has no ## Layout section")
	}
	section := s[i+len("\n## Layout\n"):]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	for _, p := range goList(t) {
		name := "`" + rel(p.ImportPath) + "/`"
		if rel(p.ImportPath) == "" {
			name = "`payrecon`"
		}
		if !strings.Contains(section, name) {
			t.Errorf("README's Layout section does not name package %s (as %s)", p.ImportPath, name)
		}
	}
}
