package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripesim"
)

// Connect's benchmarks (issue 21), with whole `payrecon run` processes
// over one database and the simulator in the benchmark's process. Each
// runs once whatever b.N (-benchtime 1x) and reports its figures with
// b.ReportMetric; docs/benchmarks.md has the commands and the results.

// cycleAudit records every change of reconciliation_cursor: which batch
// moved which account's cursor, from which process, when, and the cycles
// completed (with when the completed cycle started).
const cycleAudit = `
CREATE UNLOGGED TABLE cycle_audit (n bigserial, job text, old_last bigint, new_last bigint, completed boolean,
  cycle_started_at timestamptz, app text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION cycle_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO cycle_audit (job, old_last, new_last, completed, cycle_started_at, app)
      VALUES (NEW.job, 0, NEW.last_id, NEW.last_cycle_completed_at IS NOT NULL, NEW.cycle_started_at, current_setting('application_name'));
  ELSE
    INSERT INTO cycle_audit (job, old_last, new_last, completed, cycle_started_at, app)
      VALUES (NEW.job, OLD.last_id, NEW.last_id, NEW.last_cycle_completed_at IS DISTINCT FROM OLD.last_cycle_completed_at,
        OLD.cycle_started_at, current_setting('application_name'));
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER cycle_audit AFTER INSERT OR UPDATE ON reconciliation_cursor FOR EACH ROW EXECUTE FUNCTION cycle_audit();`

// benchAccount is one account of a benchmark and its rows.
type benchAccount struct {
	name string
	rows int
}

type platBench struct {
	b      *testing.B
	url    string
	pool   *pgxpool.Pool
	sim    *stripesim.Server
	env    map[string]string
	rows   int
	first  map[string]int64 // each account's first payment id
	procs  []*proc
	admins []string
	start  time.Time
	killed int // the replica the benchmark killed (-1: none)
}

// newPlatBench seeds payments with the account column, each account's rows
// contiguous in id order, every row paid here and succeeded in Stripe (on
// its account), migrates, and installs the cycle audit. Without column,
// payments has no account column and the intents are the platform's own.
func newPlatBench(b *testing.B, accounts []benchAccount, column bool) *platBench {
	b.Helper()
	ctx := context.Background()
	pb := &platBench{b: b, url: pgtest.NewURL(b), first: map[string]int64{}, killed: -1}
	pb.pool = pgtestPoolB(b, pb.url)
	pb.sim = simtest.Start(b, stripesim.Config{Seed: 1})
	if column {
		pgtest.Exec(b, pb.pool, "ALTER TABLE payments ADD COLUMN stripe_account_id text")
	}
	base := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	var ps []pgtest.Payment
	var owner []string
	for _, a := range accounts {
		for i := range a.rows {
			ps = append(ps, pgtest.Payment{IntentID: fmt.Sprintf("pi_%s_%06d", a.name, i), Status: payrecon.StatusPaid,
				CreatedAt: base.Add(time.Duration(len(ps)) * time.Second)})
			if column {
				owner = append(owner, a.name)
			} else {
				owner = append(owner, "")
			}
		}
	}
	pb.rows = len(ps)
	if err := pb.sim.Seed(len(ps), func(i int) stripesim.Intent {
		return stripesim.Intent{ID: ps[i].IntentID, Status: payrecon.IntentSucceeded, Created: ps[i].CreatedAt, Account: owner[i]}
	}); err != nil {
		b.Fatal(err)
	}
	ids, err := pgtest.CopyPayments(ctx, pb.pool, ps)
	if err != nil {
		b.Fatal(err)
	}
	var los, his []int64
	var names []string
	at := 0
	for _, a := range accounts {
		los, his, names = append(los, ids[at]), append(his, ids[at+a.rows-1]), append(names, a.name)
		pb.first[a.name] = ids[at]
		at += a.rows
	}
	if column {
		pgtest.Exec(b, pb.pool, `UPDATE payments p SET stripe_account_id = v.acct
			FROM (SELECT unnest($1::bigint[]) AS lo, unnest($2::bigint[]) AS hi, unnest($3::text[]) AS acct) v
			WHERE p.id BETWEEN v.lo AND v.hi`, los, his, names)
	}
	// The UPDATE left every row's old version behind: rewrite the table,
	// so that both sides of a comparison read a table of the same shape.
	pgtest.Exec(b, pb.pool, "VACUUM FULL ANALYZE payments")
	pb.env = map[string]string{"DATABASE_URL": pb.url, "STRIPE_SECRET_KEY": pb.sim.SecretKey(), "STRIPE_API_BASE": pb.sim.URL()}
	if err := run(ctx, []string{"migrate"}, func(k string) string { return pb.env[k] }, io.Discard, io.Discard); err != nil {
		b.Fatal(err)
	}
	pgtest.Exec(b, pb.pool, cycleAudit)
	return pb
}

// startReplicas starts n `payrecon run` replicas with args, each reading
// Stripe at apiBase(i) (nil: the simulator).
func (pb *platBench) startReplicas(n int, apiBase func(i int) string, args ...string) {
	pb.b.Helper()
	pb.start = time.Now()
	for i := range n {
		env := maps.Clone(pb.env)
		if apiBase != nil {
			env["STRIPE_API_BASE"] = apiBase(i)
		}
		admin := freeAddr(pb.b)
		pb.procs = append(pb.procs, startBinary(pb.b, env, append(slices.Clone(args), "--http-addr", freeAddr(pb.b), "--admin-addr", admin)...))
		pb.admins = append(pb.admins, admin)
	}
}

func (pb *platBench) count(q string, args ...any) int { return pgtest.Count(pb.b, pb.pool, q, args...) }

// cycled counts the accounts that completed a cycle.
func (pb *platBench) cycled() int {
	return pb.count("SELECT count(DISTINCT job) FROM cycle_audit WHERE completed")
}

// firstCycles returns each account's first completed cycle: when it
// started and when it completed.
func (pb *platBench) firstCycles() map[string][2]time.Time {
	pb.b.Helper()
	rows, err := pb.pool.Query(context.Background(), `SELECT DISTINCT ON (job) job, cycle_started_at, at FROM cycle_audit WHERE completed ORDER BY job, n`)
	if err != nil {
		pb.b.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]time.Time{}
	for rows.Next() {
		var job string
		var s, e time.Time
		if err := rows.Scan(&job, &s, &e); err != nil {
			pb.b.Fatal(err)
		}
		out[job] = [2]time.Time{s, e}
	}
	return out
}

var batchesMetric = regexp.MustCompile(`(?m)^payrecon_platform_batches_total (\S+)$`)

// batches reads each replica's payrecon_platform_batches_total (-1 for one
// that does not answer).
func (pb *platBench) batches() []float64 {
	out := make([]float64, len(pb.admins))
	for i, a := range pb.admins {
		out[i] = -1
		code, body := httpGet("http://" + a + "/metrics")
		if m := batchesMetric.FindStringSubmatch(body); code == http.StatusOK && m != nil {
			out[i], _ = strconv.ParseFloat(m[1], 64)
		}
	}
	return out
}

func (pb *platBench) waitFor(what string, timeout time.Duration, cond func() bool) {
	pb.b.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		for i, p := range pb.procs {
			if len(p.done) > 0 && i != pb.killed {
				pb.b.Fatalf("replica %d exited while waiting for %s:\n%s", i+1, what, tail(p.stderr.String(), 20))
			}
		}
		if time.Now().After(deadline) {
			pb.b.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond) // a benchmark's poll: no test asserts on its timing
	}
}

func manyAccounts(n, rows int) []benchAccount {
	out := make([]benchAccount, n)
	for i := range out {
		out[i] = benchAccount{name: fmt.Sprintf("acct_%04d", i), rows: rows}
	}
	return out
}

// BenchmarkPlatformAccounts: 1,000 accounts × 100 rows, 3 replicas, in
// retrieve mode at --platform-rps: every account completes a cycle; the
// slowest account's first cycle against the even-share ideal (every
// account at its even share of the budget: all rows / --platform-rps;
// target ≤ 1.5 ×); batches per replica against even (target ±25 %); then
// one replica is SIGKILLed, and the time until every account it was
// running advances again on the others.
func BenchmarkPlatformAccounts(b *testing.B) {
	const accounts, rows, replicas, platformRPS = 1000, 100, 3, 1000
	// The second cycles start after the first pass (ideal: 100 s), so that
	// the first pass is measured alone and the kill falls in the second.
	const minCycle = 150 * time.Second
	pb := newPlatBench(b, manyAccounts(accounts, rows), true)
	b.ResetTimer()
	pb.startReplicas(replicas, nil, "run", "--mode", "retrieve", "--batch", "25", "--rps", "0", "--platform-rps", strconv.Itoa(platformRPS),
		"--min-cycle", minCycle.String(), "--read-share", "0", "--grace", "0", "--events-interval", "0", "--log-format", "json", "--repair-rescue-after", "10s", "--db-max-conns", "20")
	pb.waitFor("every account's first cycle", 15*time.Minute, func() bool { return pb.cycled() == accounts })
	all := time.Since(pb.start)
	perReplica := pb.batches()
	cycles := pb.firstCycles()
	var slowest time.Duration
	var slowJob string
	durations := make([]time.Duration, 0, len(cycles))
	for job, c := range cycles {
		d := c[1].Sub(c[0])
		durations = append(durations, d)
		if d > slowest {
			slowest, slowJob = d, job
		}
	}
	slices.Sort(durations)
	ideal := time.Duration(float64(accounts*rows) / platformRPS * float64(time.Second))
	var total float64
	for _, n := range perReplica {
		total += n
	}
	even := total / replicas
	var worstDev float64
	for _, n := range perReplica {
		worstDev = max(worstDev, abs(n-even)/even)
	}
	b.Logf("all %d accounts cycled %s after the start (%.0f rows/s); first cycles: median %s, slowest %s (%s); ideal %s; batches per replica %v",
		accounts, all.Round(time.Millisecond), float64(accounts*rows)/all.Seconds(), durations[len(durations)/2].Round(time.Millisecond),
		slowest.Round(time.Millisecond), slowJob, ideal, perReplica)
	b.ReportMetric(slowest.Seconds(), "slowest-cycle-s")
	b.ReportMetric(slowest.Seconds()/ideal.Seconds(), "slowest/ideal")
	b.ReportMetric(durations[len(durations)/2].Seconds(), "median-cycle-s")
	b.ReportMetric(float64(accounts*rows)/all.Seconds(), "rows/s")
	b.ReportMetric(100*worstDev, "worst-replica-dev-%")

	// The kill, in the second pass: the accounts the victim has a batch of
	// running do not advance until River rescues them for the others.
	var n0 int
	if err := pb.pool.QueryRow(context.Background(), "SELECT max(n) FROM cycle_audit").Scan(&n0); err != nil {
		b.Fatal(err)
	}
	pb.waitFor("the second pass", 10*time.Minute, func() bool { return pb.count("SELECT count(*) FROM cycle_audit WHERE n > $1", n0) >= 1000 })
	victim := pb.procs[replicas-1]
	pb.killed = replicas - 1
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.Fatal(err)
	}
	killed := time.Now()
	// Its accounts: those whose batch was running when it died and still
	// is a few seconds on (a live replica's batch of 25 rows takes a
	// fraction of a second). Their next batch waits for River's rescuer
	// (--repair-rescue-after, checked every 30 s), then for its turn in
	// the queue behind the other accounts' batches.
	time.Sleep(3 * time.Second)
	rs, err := pb.pool.Query(context.Background(), `SELECT args->>'job', id FROM river_job
		WHERE kind = 'payrecon_sweep_account' AND state = 'running' AND attempted_at < $1`, killed)
	if err != nil {
		b.Fatal(err)
	}
	lost := map[string]int64{}
	for rs.Next() {
		var job string
		var id int64
		if err := rs.Scan(&job, &id); err != nil {
			b.Fatal(err)
		}
		lost[job] = id
	}
	rs.Close()
	stalled := len(lost)
	var rescued, recovered time.Duration
	for job, id := range lost {
		pb.waitFor(job+"'s batch to be rescued", 5*time.Minute, func() bool {
			return pb.count("SELECT count(*) FROM river_job WHERE id = $1 AND state = 'running'", id) == 0
		})
		rescued = max(rescued, time.Since(killed))
	}
	for job := range lost {
		pb.waitFor(job+" to advance after the kill", 5*time.Minute, func() bool {
			return pb.count("SELECT count(*) FROM cycle_audit WHERE job = $1 AND at > $2", job, killed) > 0
		})
		recovered = max(recovered, time.Since(killed))
	}
	b.Logf("SIGKILL of one replica: %d accounts had a batch running on it; rescued by %s, all advanced again %s after the kill",
		stalled, rescued.Round(time.Millisecond), recovered.Round(time.Millisecond))
	b.ReportMetric(rescued.Seconds(), "rescued-s")
	b.ReportMetric(float64(stalled), "stalled-accounts")
	b.ReportMetric(recovered.Seconds(), "recovery-s")
}

// BenchmarkPlatformBigAccount: one account of 100,000 rows beside 999 of
// 100, 3 replicas, no budget cap: the small accounts' first cycles while
// the big one runs (target: each completes one before the big account is
// 10 % through).
func BenchmarkPlatformBigAccount(b *testing.B) {
	const big, small, smallRows, replicas = 100_000, 999, 100, 3
	accts := append([]benchAccount{{name: "acct_big", rows: big}}, manyAccounts(small, smallRows)...)
	pb := newPlatBench(b, accts, true)
	b.ResetTimer()
	pb.startReplicas(replicas, nil, "run", "--mode", "retrieve", "--batch", "25", "--rps", "0", "--platform-rps", "0",
		"--min-cycle", "1h", "--grace", "0", "--events-interval", "0", "--log-format", "json", "--db-max-conns", "20")
	bigJob := payrecon.AccountJob("payments-vs-stripe", "acct_big")
	pb.waitFor("every small account's first cycle", 15*time.Minute, func() bool {
		return pb.count("SELECT count(DISTINCT job) FROM cycle_audit WHERE completed AND job <> $1", bigJob) == small
	})
	done := time.Since(pb.start)
	var bigAt int64
	if err := pb.pool.QueryRow(context.Background(), "SELECT coalesce(max(new_last), 0) FROM cycle_audit WHERE job = $1", bigJob).Scan(&bigAt); err != nil {
		b.Fatal(err)
	}
	progress := 0.0
	if bigAt > 0 {
		progress = float64(bigAt-pb.first["acct_big"]+1) / big
	}
	cycles := pb.firstCycles()
	var slowest time.Duration
	for job, c := range cycles {
		if job != bigJob {
			slowest = max(slowest, c[1].Sub(pb.start))
		}
	}
	b.Logf("every small account cycled %s after the start (slowest first cycle done at %s); the big account was then %.1f %% through",
		done.Round(time.Millisecond), slowest.Round(time.Millisecond), 100*progress)
	b.ReportMetric(slowest.Seconds(), "small-all-cycled-s")
	b.ReportMetric(100*progress, "big-%-through")
}

// BenchmarkPlatformBudget: 3 replicas over 300 accounts at --platform-rps
// 150, every request recorded at the simulator: the highest rate over any
// one second against the budget (target ≤ 1.1 ×) and the share of it used
// over the run (target ≥ 0.9).
func BenchmarkPlatformBudget(b *testing.B) {
	const accounts, rows, replicas, platformRPS = 300, 30, 3, 150
	pb := newPlatBench(b, manyAccounts(accounts, rows), true)
	rec := simtest.NewRecorder(pb.sim)
	fronts := make([]string, replicas)
	for i := range fronts {
		fronts[i] = rec.Front(b, fmt.Sprint("r", i+1))
	}
	b.ResetTimer()
	pb.startReplicas(replicas, func(i int) string { return fronts[i] }, "run", "--mode", "retrieve", "--batch", "25", "--rps", "0",
		"--platform-rps", strconv.Itoa(platformRPS), "--min-cycle", "1h", "--grace", "0", "--events-interval", "0", "--log-format", "json", "--db-max-conns", "20")
	pb.waitFor("every account's cycle", 10*time.Minute, func() bool { return pb.cycled() == accounts })
	reqs := rec.Requests(func(q simtest.Request) bool { return strings.HasPrefix(q.Path, "/v1/payment_intents/") })
	peak, at := simtest.PeakPerSecond(reqs)
	// The share used: over the run's middle (from its 5th second to 5 s
	// before its last request), past the replicas' start and the last
	// accounts' tail.
	mid := slices.DeleteFunc(slices.Clone(reqs), func(q simtest.Request) bool {
		return q.At.Before(reqs[0].At.Add(5*time.Second)) || q.At.After(reqs[len(reqs)-1].At.Add(-5*time.Second))
	})
	peak2, _ := simtest.Peak(reqs, 2*time.Second)
	midPeak, midAt := simtest.PeakPerSecond(mid)
	b.Logf("%d requests; peak %d in one second, %s after the first request (budget %d), %d over two seconds; in the middle, peak %d at %s; mean %.1f/s over the run, %.1f/s over its middle",
		len(reqs), peak, at.Sub(reqs[0].At).Round(time.Millisecond), platformRPS, peak2, midPeak, midAt.Sub(reqs[0].At).Round(time.Millisecond), simtest.Rate(reqs), simtest.Rate(mid))
	b.ReportMetric(float64(peak2)/2/platformRPS, "peak2s/budget")
	b.ReportMetric(float64(peak)/platformRPS, "peak/budget")
	b.ReportMetric(simtest.Rate(mid)/platformRPS, "share-used")
	b.ReportMetric(simtest.Rate(reqs)/platformRPS, "share-used-whole-run")
}

// BenchmarkPlatformOverhead: one account on one replica, as whole
// processes: `payrecon run` sweeping it as a chain of River batches (the
// account column present) against today's single leased sweep (no
// account column), rows per second of the first cycle (target within
// 10 %). Alternating, three of each.
func BenchmarkPlatformOverhead(b *testing.B) {
	const rows = 30_000
	for round := range 3 {
		for _, chain := range []bool{false, true} {
			pb := newPlatBench(b, []benchAccount{{name: "acct_one", rows: rows}}, chain)
			start := time.Now()
			pb.startReplicas(1, nil, "run", "--mode", "retrieve", "--rps", "0", "--platform-rps", "0",
				"--min-cycle", "1h", "--grace", "0", "--events-interval", "0", "--log-format", "json", "--db-max-conns", "20")
			pb.waitFor("the cycle", 10*time.Minute, func() bool { return pb.cycled() == 1 })
			var began, ended time.Time
			if err := pb.pool.QueryRow(context.Background(), "SELECT min(at), max(at) FROM cycle_audit").Scan(&began, &ended); err != nil {
				b.Fatal(err)
			}
			c := pb.firstCycles()
			var cycle [2]time.Time
			for _, v := range c {
				cycle = v
			}
			name := "single"
			if chain {
				name = "chain"
			}
			rate := rows / cycle[1].Sub(cycle[0]).Seconds()
			b.Logf("round %d %s: %.0f rows/s (cycle %s; process start to cycle end %s)", round, name, rate,
				cycle[1].Sub(cycle[0]).Round(time.Millisecond), ended.Sub(start).Round(time.Millisecond))
			b.ReportMetric(rate, name+"-rows/s-"+strconv.Itoa(round))
			for _, p := range pb.procs {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				<-p.done
				p.done <- nil
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
