package pgadmin_test

import (
	"strings"
	"testing"

	"github.com/payrecon/payrecon/internal/pgadmin"
)

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"postgres://u:p@h:5432/postgres?sslmode=disable": "postgres://u:p@h:5432/d?sslmode=disable",
		"postgresql://h/x":              "postgresql://h/d",
		"host=h user=u dbname=postgres": "host=h user=u dbname=postgres dbname=d",
	}
	for in, want := range cases {
		if got, err := pgadmin.WithDatabase(in, "d"); err != nil || got != want {
			t.Errorf("WithDatabase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := pgadmin.WithDatabase("postgres://u:secret@[::1", "d"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a malformed URL: %v", err)
	}
}

func TestRandomName(t *testing.T) {
	t.Parallel()
	a, b := pgadmin.RandomName("x_"), pgadmin.RandomName("x_")
	if a == b || !strings.HasPrefix(a, "x_") || len(a) != 14 {
		t.Errorf("RandomName gave %q and %q", a, b)
	}
}
