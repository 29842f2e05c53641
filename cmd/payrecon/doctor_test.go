package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/payrecon/payrecon/doctor"
	"github.com/payrecon/payrecon/internal/pgtest"
)

// payrecon doctor through the CLI: run's environment, one line per check,
// exit 0 when nothing fails, 1 when something does, 2 on bad usage; JSON
// with --json. It runs against a database made read-only.
func TestDoctorCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool := pgtestPool(t, b.url)
	pgtest.Exec(t, pool, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$")
	env := map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_0123456789abcdefABCDEF", "PAYRECON_EVENTS_INTERVAL": "0"}
	for k, v := range b.env {
		env[k] = v
	}
	args := []string{"doctor", "--replicas", "1", "--db-max-conns", "12", "--min-cycle", "24h", "--mode", "list"}
	r := runCLI(t, env, args...)
	if r.code != 0 {
		t.Fatalf("doctor on a sound installation: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"OK    database", "OK    migrations", "OK    webhook_secret", "WARN  stripe_key", "checks: 0 failed, 1 warned"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor's output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, env, append(args, "--json", "--admin-addr", "0.0.0.0:8081")...)
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if r.code != 1 || rep.Failed != 1 || !strings.Contains(r.stderr, "1 of") {
		t.Errorf("doctor with an exposed console: exit %d, %d failed, %s", r.code, rep.Failed, r.stderr)
	}
	if r = runCLI(t, env, "doctor", "--replicas", "0"); r.code != 2 {
		t.Errorf("doctor --replicas 0: exit %d, want 2", r.code)
	}
}
