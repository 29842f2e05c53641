// Package sqlq loads the SQL statements a package keeps in .sql files: one
// statement per file, named after the file, embedded in the binary. Every
// package that runs SQL embeds its own queries/ folder and loads it once
// with New; a missing name is a programming error and panics at the call
// that asks for it, which every test of the caller reaches.
//
// Statements use named parameters (@payment_id), bound with pgx.StrictNamedArgs (a missing or extra one is an error),
// and say in a leading comment what they do and what each parameter is.
package sqlq

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Set is the statements of one package, by name.
type Set struct {
	pkg   string
	stmts map[string]string
}

// New reads every *.sql file of dir in fsys. pkg names the owner in panics.
// It panics when the folder cannot be read: the files are embedded, so that
// can only be a build mistake.
func New(pkg string, fsys fs.FS, dir string) Set {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("%s: no SQL files in %s: %v", pkg, dir, err))
	}
	s := Set{pkg: pkg, stmts: make(map[string]string, len(files))}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			panic(fmt.Sprintf("%s: read %s: %v", pkg, f, err))
		}
		s.stmts[strings.TrimSuffix(path.Base(f), ".sql")] = strings.TrimSpace(string(b))
	}
	return s
}

// Get returns the statement in <name>.sql.
func (s Set) Get(name string) string {
	q, ok := s.stmts[name]
	if !ok {
		panic(fmt.Sprintf("%s: no query %q", s.pkg, name))
	}
	return q
}

// Has reports whether the set has a statement <name>.sql.
func (s Set) Has(name string) bool {
	_, ok := s.stmts[name]
	return ok
}

// Names lists the statements, for tests that check every one parses.
func (s Set) Names() []string {
	out := make([]string, 0, len(s.stmts))
	for n := range s.stmts {
		out = append(out, n)
	}
	return out
}
