package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/payrecon/payrecon"
)

// flagName is the flag kong makes of a struct field: its name tag, else
// the field's name in kebab case.
func flagName(f reflect.StructField) string {
	if n := f.Tag.Get("name"); n != "" {
		return n
	}
	var b strings.Builder
	for i, r := range f.Name {
		if unicode.IsUpper(r) && i > 0 && !unicode.IsUpper(rune(f.Name[i-1])) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// configurationFlags walks the command line's structs and returns, for
// each flag that configures payrecon (it has a default or an environment
// variable), the struct fields that declare it.
func configurationFlags(t reflect.Type, seen map[reflect.Type]bool, out map[string][]string) {
	if seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		ft := f.Type
		_, isCmd := f.Tag.Lookup("cmd")
		_, isEmbed := f.Tag.Lookup("embed")
		if f.Anonymous || isCmd || isEmbed {
			if ft.Kind() == reflect.Struct {
				configurationFlags(ft, seen, out)
			}
			continue
		}
		if _, isArg := f.Tag.Lookup("arg"); !f.IsExported() || isArg || f.Tag.Get("kong") == "-" {
			continue
		}
		_, hasDefault := f.Tag.Lookup("default")
		if hasDefault || f.Tag.Get("env") != "" {
			name := flagName(f)
			out[name] = append(out[name], t.Name()+"."+f.Name)
		}
	}
}

// No configuration flag is declared twice: each is one field of one flag
// group that every command needing it embeds, so its name, environment
// variable, default and help cannot drift apart. The exceptions mean
// something else under the same name.
func TestNoConfigurationFlagDeclaredTwice(t *testing.T) {
	t.Parallel()
	out := map[string][]string{}
	configurationFlags(reflect.TypeOf(cli{}), map[reflect.Type]bool{}, out)
	if len(out) < 40 {
		t.Fatalf("found only %d configuration flags: the walk misses some", len(out))
	}
	// Declarations that mean something else than the flag's first one.
	except := map[string][]string{
		"admin-addr": {"demoCmd.Admin"},                                // the demo's embedded service, on a free loopback port
		"rps":        {"planCmd.RPS"},                                  // plan's what-if budget, no default
		"batch":      {"pruneCmd.Batch", "planCmd.Batch"},              // rows a prune statement examines; plan's what-if B
		"workers":    {"relayCmd.Workers"},                             // relay alone has more connections for its workers (16, run 10)
		"limit":      {"repairsListCmd.Limit", "payoutsListCmd.Limit"}, // each list's own page
		"since":      {"payoutsCheckCmd.Since"},                        // payouts listed back (90d) vs the events catch-up's first start (72h)
	}
	for name, decls := range out {
		decls = slices.DeleteFunc(decls, func(d string) bool { return slices.Contains(except[name], d) })
		if len(decls) > 1 {
			t.Errorf("--%s is declared %d times: %v", name, len(decls), decls)
		}
	}
}

// findings list --kind's help names every finding kind (it is generated
// from payrecon.Kinds).
func TestFindingsListKindHelpNamesEveryKind(t *testing.T) {
	t.Parallel()
	r := runCLI(t, map[string]string{}, "findings", "list", "--help")
	help := strings.Join(strings.Fields(r.stdout), " ")
	for _, k := range payrecon.Kinds {
		if !strings.Contains(help, string(k)) {
			t.Errorf("findings list --help does not name %s", k)
		}
	}
}
