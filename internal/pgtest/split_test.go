package pgtest

import (
	"slices"
	"testing"
)

// Statements are cut at the semicolons that end them, never inside quotes,
// dollar quotes or comments.
func TestSplitStatements(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sql  string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SET a = 1; SET b = 2; SET c = 3", []string{"SET a = 1", "SET b = 2", "SET c = 3"}},
		{"-- header; with a semicolon\nSELECT 1;\n", []string{"-- header; with a semicolon\nSELECT 1"}},
		{"SELECT 'a;b', \"c;d\" FROM t; SELECT 2", []string{"SELECT 'a;b', \"c;d\" FROM t", "SELECT 2"}},
		{"SELECT 'it''s; fine'", []string{"SELECT 'it''s; fine'"}},
		{"DO $$ BEGIN PERFORM 1; END $$; SELECT $1", []string{"DO $$ BEGIN PERFORM 1; END $$", "SELECT $1"}},
		{"DO $fn$ x; $$ y; $fn$", []string{"DO $fn$ x; $$ y; $fn$"}},
		{"SELECT /* a; b */ 1; /* only a comment; */", []string{"SELECT /* a; b */ 1"}},
		{"-- nothing but a comment", nil},
	} {
		if got := SplitStatements(c.sql); !slices.Equal(got, c.want) {
			t.Errorf("SplitStatements(%q) = %q, want %q", c.sql, got, c.want)
		}
	}
}
