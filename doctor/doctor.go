// Package doctor checks a payrecon installation before its first day, the
// way `payrecon doctor` reports it: one result per check, ok, warn or fail,
// each with the fix in one sentence.
//
// Every check only reads. The database is opened with
// default_transaction_read_only (PostgreSQL refuses any write), the
// catalogue and settings are all it reads besides two counts on payments'
// indexes; Stripe is asked with list and retrieve requests only; the
// notification URL is sent one signed test delivery only when asked
// (Config.PingNotify).
package doctor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/digits"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
)

// Status is a check's verdict.
type Status string

// Statuses, from best to worst.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check's outcome.
type Result struct {
	// Check names the check (stable: scripts may match it).
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Detail says what was found; Fix, for warn and fail, what to do.
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is every check's result, in the order they ran.
type Report struct {
	Results []Result `json:"results"`
	// Failed and Warned count the fail and warn results.
	Failed int `json:"failed"`
	Warned int `json:"warned"`
}

func (r *Report) add(check string, st Status, detail, fix string) {
	r.Results = append(r.Results, Result{Check: check, Status: st, Detail: detail, Fix: fix})
	switch st {
	case Fail:
		r.Failed++
	case Warn:
		r.Warned++
	}
}

func (r *Report) ok(check, detail string)        { r.add(check, OK, detail, "") }
func (r *Report) warn(check, detail, fix string) { r.add(check, Warn, detail, fix) }
func (r *Report) fail(check, detail, fix string) { r.add(check, Fail, detail, fix) }
func (r *Report) judge(check string, st Status, detail, fix string) {
	if st == OK {
		fix = ""
	}
	r.add(check, st, detail, fix)
}

// Config is the installation to check: what `payrecon run` would be given.
type Config struct {
	// DatabaseURL is DATABASE_URL.
	DatabaseURL string
	// Replicas is how many `payrecon run` processes will share the
	// database; DBMaxConns is each one's --db-max-conns.
	Replicas, DBMaxConns int
	// StripeSecretKey is STRIPE_SECRET_KEY; Gateway the client built on it
	// (nil when it could not be built: the Stripe checks then fail).
	StripeSecretKey string
	Gateway         *stripeapi.Gateway
	// The sweep's settings: its budget, its minimum cycle, its mode
	// (retrieve, list, auto), the money columns, the catch-up's interval
	// and the recent window.
	RPS      float64
	MinCycle time.Duration
	// ReadShare is --read-share: the share of the read allocation the sweep
	// plans to use at most (payrecon.Allocate stretches cycles beyond).
	ReadShare                    float64
	SweepMode                    string
	AmountColumn, CurrencyColumn string
	EventsInterval               time.Duration
	// PayoutsInterval is the payouts check's (0: off).
	PayoutsInterval              time.Duration
	RecentWindow, RecentInterval time.Duration
	// WebhookSecrets is STRIPE_WEBHOOK_SECRET as given (comma-separated).
	WebhookSecrets string
	// Notify is the notification configuration; PingNotify sends its URL
	// one signed test delivery.
	Notify     relay.NotifyConfig
	PingNotify bool
	// AdminAddr is --admin-addr; ConsolePassword the console's password.
	AdminAddr, ConsolePassword string
	// AccountColumn and SessionColumn are the optional columns looked for
	// besides the money columns (Connect accounts, Checkout Sessions).
	AccountColumn, SessionColumn string
	// Clock is the local clock compared with Stripe's and the database's;
	// nil means the system clock.
	Clock payrecon.Clock
	// Logger receives nothing but failures to close; nil discards.
	Logger *slog.Logger
}

// Thresholds of the clock checks: a skew above ClockWarn makes the grace
// window and webhook timestamps imprecise; above ClockFail Stripe's webhook
// signatures (5 minutes of tolerance) are refused.
const (
	ClockWarn = 10 * time.Second
	ClockFail = 5 * time.Minute
)

// Run runs every check. Checks that need the database are skipped, with
// one line saying so, when it cannot be reached.
func Run(ctx context.Context, cfg Config) Report {
	if cfg.Clock == nil {
		cfg.Clock = payrecon.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var rep Report
	sessions := false // the rows record Checkout Sessions: the key must read them
	pool := checkDatabase(ctx, &rep, cfg)
	if pool != nil {
		defer pool.Close()
		migrated := checkMigrations(ctx, &rep, pool)
		checkPayments(ctx, &rep, pool, migrated, cfg)
		checkConnections(ctx, &rep, pool, cfg)
		checkDatabaseClock(ctx, &rep, pool, cfg)
		checkReads(ctx, &rep, pool, cfg)
		if sc, err := postgres.DetectSessionColumn(ctx, pool, cfg.SessionColumn); err == nil {
			sessions = sc.Found
		}
	}
	checkStripe(ctx, &rep, cfg, sessions)
	checkWebhookSecrets(&rep, cfg)
	checkNotify(ctx, &rep, cfg)
	checkConsole(&rep, cfg)
	return rep
}

func checkDatabase(ctx context.Context, rep *Report, cfg Config) *pgxpool.Pool {
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.OpenConfig{
		ApplicationName: postgres.ApplicationName("doctor"), MaxConns: 2, ReadOnly: true, ConnectTimeout: 10 * time.Second})
	if err != nil {
		rep.fail("database", err.Error(), "set DATABASE_URL to the application's database (postgres://user@host:5432/db) and make sure the server accepts this host; the database checks were skipped")
		return nil
	}
	var version, db, user string
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version'), current_database(), current_user").Scan(&version, &db, &user); err != nil {
		pool.Close()
		rep.fail("database", fmt.Sprintf("connected, but the server does not answer: %v", err), "check the server's health; the database checks were skipped")
		return nil
	}
	rep.ok("database", fmt.Sprintf("PostgreSQL %s, database %s as %s (read-only session)", version, db, user))
	return pool
}

func versions(vs []int64) string {
	parts := make([]string, 0, min(len(vs), 8))
	for i, v := range vs {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("… %d more", len(vs)-8))
			break
		}
		parts = append(parts, fmt.Sprintf("%05d", v))
	}
	return strings.Join(parts, ", ")
}

func checkMigrations(ctx context.Context, rep *Report, pool *pgxpool.Pool) bool {
	st, err := postgres.ReadMigrationState(ctx, pool)
	switch {
	case err != nil:
		rep.fail("migrations", err.Error(), "check that the role may read the catalogue")
		return false
	case !st.Migrated:
		rep.fail("migrations", fmt.Sprintf("no payrecon schema: `payrecon migrate` would create payrecon's tables and apply %d migrations (%s)", len(st.Pending), versions(st.Pending)),
			"run `payrecon migrate` (it only adds tables, nullable columns and indexes built CONCURRENTLY)")
		return false
	case len(st.Pending) > 0:
		rep.fail("migrations", fmt.Sprintf("%d of %d migrations pending: `payrecon migrate` would apply %s", len(st.Pending), len(st.Known), versions(st.Pending)),
			"run `payrecon migrate`: forward-only, safe while the previous version keeps running")
		return true
	case len(st.Unknown) > 0:
		rep.warn("migrations", fmt.Sprintf("all %d migrations applied, and %d this binary does not know (%s): a newer payrecon migrated this database", len(st.Known), len(st.Unknown), versions(st.Unknown)),
			"upgrade this binary to the version that migrated the database")
		return true
	}
	rep.ok("migrations", fmt.Sprintf("all %d migrations applied (latest %05d)", len(st.Known), st.Known[len(st.Known)-1]))
	return true
}

func checkPayments(ctx context.Context, rep *Report, pool *pgxpool.Pool, migrated bool, cfg Config) {
	info, err := postgres.ReadPaymentsInfo(ctx, pool)
	if err != nil {
		rep.fail("payments", err.Error(), "check that the role may read the catalogue")
		return
	}
	switch err := postgres.CheckPaymentsShape(ctx, pool); {
	case info.Relation == "":
		rep.warn("payments", "no relation named payments on the search_path: `payrecon migrate` would create the seed's table",
			"point DATABASE_URL (search_path) at the application's schema, or let migrate create the table only if that is what you want")
		return
	case err != nil:
		var shape *postgres.PaymentsShapeError
		if errors.As(err, &shape) {
			rep.fail("payments", fmt.Sprintf("%s: %s", shape.Relation, strings.Join(shape.Problems, "; ")),
				"change the table, or put an updatable view named payments in front of it (docs/payments-table.md)")
			return
		}
		rep.fail("payments", err.Error(), "check that the role may read the catalogue")
		return
	default:
		rep.ok("payments", fmt.Sprintf("%s (%s) has every column payrecon reads and writes, and its rows can be locked", info.Relation, info.Kind))
	}
	checkIndexes(rep, info, migrated)
	checkOptionalColumns(ctx, rep, pool, info, cfg)
}

func checkIndexes(rep *Report, info postgres.PaymentsInfo, migrated bool) {
	if info.Kind == "view" {
		rep.warn("payments_indexes", "payments is a view: its table's indexes are not visible through it",
			"index the application's table on its key, its PaymentIntent id and its creation time (docs/payments-table.md)")
		return
	}
	var problems, fixes []string
	lead := func(col string) (postgres.IndexInfo, bool) {
		for _, ix := range info.Indexes {
			if ix.Leads(col) && ix.Valid {
				return ix, true
			}
		}
		return postgres.IndexInfo{}, false
	}
	st := OK
	for _, ix := range info.Indexes {
		if !ix.Valid {
			st = Fail
			problems = append(problems, fmt.Sprintf("index %s is INVALID (an interrupted CREATE INDEX CONCURRENTLY)", ix.Name))
			fixes = append(fixes, fmt.Sprintf("DROP INDEX CONCURRENTLY %s, then run `payrecon migrate` again", ix.Name))
		}
	}
	if ix, ok := lead("id"); !ok || !ix.Unique {
		st = Fail
		problems = append(problems, "no unique index on id (the sweep walks id in order)")
		fixes = append(fixes, "add a primary key on payments.id")
	}
	if _, ok := lead("stripe_payment_intent_id"); !ok {
		if st == OK {
			st = Warn
		}
		problems = append(problems, "no index on stripe_payment_intent_id (each webhook and event looks its payment up by intent: a scan of payments)")
		fixes = append(fixes, "CREATE INDEX CONCURRENTLY ON payments (stripe_payment_intent_id)")
	}
	if _, ok := lead("created_at"); !ok {
		if migrated {
			st = Fail
			fixes = append(fixes, "run `payrecon migrate` again (it builds payments_created_at CONCURRENTLY)")
		} else if st == OK {
			st = Warn
			fixes = append(fixes, "`payrecon migrate` builds it CONCURRENTLY")
		}
		problems = append(problems, "no index on created_at (list mode, the recent window and the growth figure read by creation time)")
	}
	if len(problems) == 0 {
		rep.ok("payments_indexes", fmt.Sprintf("%d indexes: id unique, stripe_payment_intent_id and created_at indexed, all valid", len(info.Indexes)))
		return
	}
	rep.judge("payments_indexes", st, strings.Join(problems, "; "), strings.Join(fixes, "; "))
}

func checkOptionalColumns(ctx context.Context, rep *Report, pool *pgxpool.Pool, info postgres.PaymentsInfo, cfg Config) {
	m, err := postgres.DetectMoneyColumns(ctx, pool, cfg.AmountColumn, cfg.CurrencyColumn)
	if err != nil {
		rep.fail("optional_columns", err.Error(), "check that the role may read the catalogue")
		return
	}
	var found, fixes []string
	st := OK
	money := func(what, col string, on bool, problem string) {
		_, exists := info.Columns[col]
		switch {
		case on:
			found = append(found, fmt.Sprintf("%s %s (the %s check is on)", what, col, what))
		case exists && col != "":
			st = Warn
			found = append(found, fmt.Sprintf("%s: %s, so the %s check is off", what, problem, what))
			fixes = append(fixes, fmt.Sprintf("give --%s-column a column of the right type, or an empty name to turn the check off knowingly", what))
		default:
			found = append(found, fmt.Sprintf("no %s column %q (the %s check is off)", what, col, what))
		}
	}
	money("amount", cfg.AmountColumn, m.Amount, m.AmountProblem)
	money("currency", cfg.CurrencyColumn, m.Currency, m.CurrencyProblem)
	acct, err := postgres.DetectAccountColumn(ctx, pool, cfg.AccountColumn)
	if err != nil {
		rep.fail("optional_columns", err.Error(), "check that the role may read the catalogue")
		return
	}
	_, exists := info.Columns[cfg.AccountColumn]
	switch {
	case acct.Found:
		found = append(found, fmt.Sprintf("account column %s (Connect: each connected account is swept as its own job, with its Stripe-Account)", cfg.AccountColumn))
	case exists && cfg.AccountColumn != "":
		st = Warn
		found = append(found, fmt.Sprintf("account column %s: %s, so every row is checked against the key's own account", cfg.AccountColumn, acct.Problem))
		fixes = append(fixes, "give --account-column a text column of acct_… ids")
	default:
		found = append(found, fmt.Sprintf("no account column %s (one Stripe account)", cfg.AccountColumn))
	}
	sess, err := postgres.DetectSessionColumn(ctx, pool, cfg.SessionColumn)
	if err != nil {
		rep.fail("optional_columns", err.Error(), "check that the role may read the catalogue")
		return
	}
	_, exists = info.Columns[cfg.SessionColumn]
	switch {
	case sess.Found:
		found = append(found, fmt.Sprintf("session column %s (a row with a Checkout Session and no PaymentIntent id is checked through its session)", cfg.SessionColumn))
	case exists && cfg.SessionColumn != "":
		st = Warn
		found = append(found, fmt.Sprintf("session column %s: %s, so a row with only a Checkout Session reads as invalid_local_row", cfg.SessionColumn, sess.Problem))
		fixes = append(fixes, "give --session-column a text column of cs_… ids")
	case cfg.SessionColumn != "":
		found = append(found, fmt.Sprintf("no session column %s (rows are checked through their PaymentIntent)", cfg.SessionColumn))
	}
	rep.judge("optional_columns", st, strings.Join(found, "; "), strings.Join(fixes, "; "))
}

// roundSkew renders a skew to the second.
func roundSkew(d time.Duration) string {
	return d.Round(100 * time.Millisecond).String()
}

func clockStatus(skew time.Duration) Status {
	a := skew
	if a < 0 {
		a = -a
	}
	switch {
	case a > ClockFail:
		return Fail
	case a > ClockWarn:
		return Warn
	}
	return OK
}

func checkDatabaseClock(ctx context.Context, rep *Report, pool *pgxpool.Pool, cfg Config) {
	before := cfg.Clock.Now()
	t, err := postgres.DatabaseNow(ctx, pool)
	after := cfg.Clock.Now()
	if err != nil {
		rep.fail("clock_database", err.Error(), "check the database connection")
		return
	}
	skew := t.Sub(before.Add(after.Sub(before) / 2))
	rep.judge("clock_database", clockStatus(skew), fmt.Sprintf("the database's clock is %s from this machine's", roundSkew(skew)),
		"synchronise both machines' clocks (NTP): the grace window compares the database's updated_at with this machine's time")
}

func checkConnections(ctx context.Context, rep *Report, pool *pgxpool.Pool, cfg Config) {
	c, err := postgres.ReadConnectionFacts(ctx, pool)
	if err != nil {
		rep.fail("connections", err.Error(), "check that the role may read pg_stat_activity")
		return
	}
	need := cfg.Replicas * cfg.DBMaxConns
	detail := fmt.Sprintf("%d replicas × --db-max-conns %d = %d connections; max_connections %d, %d reserved, %d open now (%d not payrecon's)",
		cfg.Replicas, cfg.DBMaxConns, need, c.Max, c.Reserved, c.InUse, c.OthersInUse)
	switch {
	case need > c.Available():
		rep.fail("connections", detail+": more than the server allows",
			fmt.Sprintf("lower --db-max-conns (at least 12 for run) or the replicas, or raise max_connections above %d", need+c.Reserved))
	case need+c.OthersInUse > c.Available():
		rep.warn("connections", detail+": they do not fit beside the connections open now",
			fmt.Sprintf("raise max_connections to at least %d, or lower --db-max-conns", need+c.OthersInUse+c.Reserved))
	default:
		rep.ok("connections", detail)
	}
}

func checkReads(ctx context.Context, rep *Report, pool *pgxpool.Pool, cfg Config) {
	fail := func(err error) {
		rep.fail("read_allocation", err.Error(), "check that payments exists and the role may read it")
	}
	col, err := postgres.DetectAccountColumn(ctx, pool, cfg.AccountColumn)
	if err != nil {
		fail(err)
		return
	}
	now := cfg.Clock.Now()
	// One count of payments per account (or one for the whole table).
	vols, err := postgres.AccountVolumes(ctx, pool, col, now.Add(-payrecon.AllocationWindow))
	if err != nil {
		fail(err)
		return
	}
	if len(vols) == 0 {
		vols = []postgres.Volume{{}}
	}
	window := payrecon.AllocationWindow.Seconds()
	events := 0.0 // one request a round when nothing happens, on the platform's own account
	if cfg.EventsInterval > 0 {
		events = window / cfg.EventsInterval.Seconds()
	}
	recent := 0.0
	if cfg.RecentWindow > 0 && cfg.RecentInterval > 0 && !col.Found {
		n, err := postgres.NewMonitor(pool).CreatedSince(ctx, now.Add(-cfg.RecentWindow))
		if err != nil {
			fail(err)
			return
		}
		recent = max(1, float64(n)*payrecon.ReadsPerRowList) * window / cfg.RecentInterval.Seconds()
	}
	perRow := payrecon.ReadsPerRowList // auto lists when that is cheaper
	if cfg.SweepMode == "retrieve" {
		perRow = 1
	}
	var (
		worst          payrecon.AllocationResult
		worstAccount   string
		worstTotal     float64
		worstShare     = -1.0
		stretched      int
		longestStretch time.Duration
	)
	for _, v := range vols {
		// The cycle the sweep would take: its minimum, or the time its
		// reads take at --rps (each account's budget), whichever is longer.
		cycle := max(cfg.MinCycle, 0)
		if cfg.RPS > 0 {
			cycle = max(cycle, time.Duration(float64(v.Rows)*perRow/cfg.RPS*float64(time.Second)))
		}
		r := payrecon.Allocate(payrecon.AllocationInput{Rows: v.Rows, Transactions: v.Recent, ReadsPerRow: perRow, Cycle: cycle, Share: cfg.ReadShare})
		if r.Stretched {
			stretched++
			longestStretch = max(longestStretch, r.MinCycle)
		}
		total := r.ProjectedReads
		if v.Account == "" {
			total += events + recent
		}
		if share := total / float64(r.Allocation); share > worstShare {
			worst, worstAccount, worstTotal, worstShare = r, v.Account, total, share
		}
	}
	who := "this account"
	if col.Found {
		who = fmt.Sprintf("the worst of %d accounts (%s)", len(vols), orPlatform(worstAccount))
	}
	detail := fmt.Sprintf("%s: %s reads per 30 days (the sweep %s, the events catch-up %s, the recent window %s) against an allocation of %s (%s transactions in 30 days × %d, at least %s): %.0f %%",
		who, count(worstTotal), count(worst.ProjectedReads), count(events), count(recent), count(float64(worst.Allocation)),
		count(float64(worst.Transactions)), payrecon.ReadsPerTransaction, count(payrecon.ReadAllocationMin), 100*worstShare)
	if stretched > 0 {
		detail += fmt.Sprintf("; --read-share %.2f stretches %d cycle%s, the longest to %s (the lag grows with it)", cfg.ReadShare, stretched, plural(stretched),
			payrecon.FormatDuration(longestStretch))
	}
	fix := "lengthen --events-interval, prefer --mode list (100 intents a request), or raise --min-cycle; Stripe allots reads per transaction over 30 days, and the application's own reads share the allocation"
	switch {
	case worstShare > 1 || math.IsInf(worstTotal, 1):
		rep.fail("read_allocation", detail, fix)
	case stretched > 0 || (cfg.ReadShare > 0 && worstShare > cfg.ReadShare):
		rep.warn("read_allocation", detail, fix)
	default:
		rep.ok("read_allocation", detail)
	}
}

func orPlatform(account string) string {
	if account == "" {
		return "the platform's own"
	}
	return account
}

// count renders a number of reads or transactions with thin digit groups.
func count(f float64) string {
	if math.IsInf(f, 1) {
		return "unbounded"
	}
	return digits.Group(int64(math.Round(f)), ",")
}

func checkStripe(ctx context.Context, rep *Report, cfg Config, sessions bool) {
	key := cfg.StripeSecretKey
	mode := ""
	switch {
	case key == "":
		rep.fail("stripe_key", "STRIPE_SECRET_KEY is not set", "create a restricted key (Developers → API keys) with PaymentIntents, Charges and Events: Read, and export STRIPE_SECRET_KEY")
		return
	case strings.HasPrefix(key, "rk_live_"), strings.HasPrefix(key, "sk_live_"):
		mode = "live"
	case strings.HasPrefix(key, "rk_test_"), strings.HasPrefix(key, "sk_test_"):
		mode = "test"
	default:
		rep.fail("stripe_key", "STRIPE_SECRET_KEY does not look like a Stripe key (sk_… or rk_…, live or test)", "copy the key again from the Dashboard (Developers → API keys)")
		return
	}
	if cfg.Gateway == nil {
		rep.fail("stripe_key", "no Stripe client could be built from the configuration", "check STRIPE_API_BASE: scheme://host[:port], or empty for api.stripe.com")
		return
	}
	before := cfg.Clock.Now()
	date, perr := cfg.Gateway.ServerDate(ctx)
	after := cfg.Clock.Now()
	var ce *payrecon.ConfigError
	switch {
	case perr == nil, errors.Is(perr, stripeapi.ErrNoDate):
	case errors.As(perr, &ce) && ce.StatusCode == http.StatusForbidden:
		// The key is accepted; a permission is missing: said below.
	case errors.Is(perr, payrecon.ErrConfig):
		rep.fail("stripe_key", fmt.Sprintf("a %s-mode key that Stripe refuses: %v", mode, perr), "create a new restricted key in the Dashboard and set STRIPE_SECRET_KEY to it")
		return
	default:
		rep.fail("stripe_key", fmt.Sprintf("Stripe could not be asked: %v", perr), "check this machine's outbound HTTPS to api.stripe.com (or STRIPE_API_BASE)")
		return
	}
	if strings.HasPrefix(key, "sk_") {
		rep.warn("stripe_key", fmt.Sprintf("a %s-mode secret key: it can write to Stripe, and payrecon only reads", mode),
			"use a restricted key (rk_…) with only PaymentIntents, Charges and Events: Read")
	} else {
		rep.ok("stripe_key", fmt.Sprintf("a %s-mode restricted key that Stripe accepts", mode))
	}
	for _, pc := range cfg.Gateway.CheckPermissions(ctx, stripeapi.AccessNeeds{Charges: true, Events: cfg.EventsInterval > 0, Sessions: sessions}) {
		name := "permission " + pc.Permission
		switch {
		case pc.Err == nil:
			rep.ok(name, "granted")
		case errors.Is(pc.Err, payrecon.ErrConfig):
			rep.fail(name, pc.Err.Error(), fmt.Sprintf("edit the restricted key in the Dashboard (Developers → API keys) and grant %s", pc.Permission))
		default:
			rep.fail(name, fmt.Sprintf("Stripe could not be asked: %v", pc.Err), "check this machine's outbound HTTPS to api.stripe.com and run doctor again")
		}
	}
	if cfg.EventsInterval <= 0 {
		rep.ok("permission "+stripeapi.PermissionEvents, "not needed: the events catch-up is off (--events-interval 0)")
	}
	const payouts = "permission Payouts: Read, Balance: Read"
	switch err := cfg.Gateway.CheckPayoutAccess(ctx, ""); {
	case cfg.PayoutsInterval <= 0:
		rep.ok(payouts, "not needed: the payouts check is off (--payouts-interval 0)")
	case err == nil:
		rep.ok(payouts, "granted")
	case errors.Is(err, payrecon.ErrConfig):
		rep.warn(payouts, err.Error()+": the payouts check turns itself off",
			"edit the restricted key in the Dashboard and grant Payouts: Read and Balance: Read, or set --payouts-interval 0")
	default:
		rep.fail(payouts, fmt.Sprintf("Stripe could not be asked: %v", err), "check this machine's outbound HTTPS to api.stripe.com and run doctor again")
	}
	if date.IsZero() {
		rep.warn("clock_stripe", "Stripe's answer had no Date header: the clock could not be compared", "nothing to do against api.stripe.com; a proxy may strip it")
		return
	}
	// Date truncates to the second: compare its middle with the middle of
	// the request.
	skew := date.Add(500 * time.Millisecond).Sub(before.Add(after.Sub(before) / 2))
	rep.judge("clock_stripe", clockStatus(skew), fmt.Sprintf("Stripe's clock is %s from this machine's (Date header, ±1 s)", roundSkew(skew)),
		"synchronise this machine's clock (NTP): Stripe refuses webhook signatures more than 5 minutes off, and the recent window and list mode read by time")
}

func checkWebhookSecrets(rep *Report, cfg Config) {
	raw := strings.TrimSpace(cfg.WebhookSecrets)
	if raw == "" {
		rep.ok("webhook_secret", "not set: POST /webhooks/stripe answers 404 and payrecon only reconciles (the events catch-up still applies missed events)")
		return
	}
	var bad []string
	n := 0
	for _, s := range strings.Split(raw, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n++
		if !strings.HasPrefix(s, "whsec_") || len(s) < len("whsec_")+16 || strings.ContainsAny(s, " \t\r\n") {
			bad = append(bad, fmt.Sprintf("secret %d is not a Stripe signing secret (whsec_ followed by at least 16 characters)", n))
		}
	}
	switch {
	case n == 0:
		rep.fail("webhook_secret", "STRIPE_WEBHOOK_SECRET is set to nothing but commas and blanks", "unset it, or set it to the endpoint's signing secret (whsec_…)")
	case len(bad) > 0:
		rep.fail("webhook_secret", strings.Join(bad, "; "), "copy the endpoint's signing secret from the Dashboard (Developers → Webhooks → the endpoint → Signing secret)")
	case n > 2:
		rep.warn("webhook_secret", fmt.Sprintf("%d signing secrets: every webhook is checked against each", n), "after a rotation, keep only the current secret (and the previous one while Stripe still uses it)")
	default:
		rep.ok("webhook_secret", fmt.Sprintf("%d signing secret%s of the right form", n, plural(n)))
	}
}

func checkNotify(ctx context.Context, rep *Report, cfg Config) {
	nc := cfg.Notify
	if nc.URL == "" {
		if cfg.PingNotify {
			rep.fail("notify", "--ping-notify without --notify-url: nothing to ping", "set PAYRECON_NOTIFY_URL (and PAYRECON_NOTIFY_SECRET), or drop --ping-notify")
			return
		}
		rep.ok("notify", "off: the application is not told about transitions (--notify-url unset)")
		return
	}
	if err := nc.Validate(); err != nil {
		rep.fail("notify", err.Error(), "set PAYRECON_NOTIFY_URL to the application's http(s) endpoint and PAYRECON_NOTIFY_SECRET to the secret it verifies with")
		return
	}
	u, _ := url.Parse(nc.URL)
	plain := u.Scheme == "http" && !isLoopback(u.Hostname())
	if !cfg.PingNotify {
		if plain {
			rep.warn("notify", fmt.Sprintf("%s over plain HTTP beyond this machine; not pinged", redactURL(u)), "use https, or a private network; run doctor --ping-notify to send a test delivery")
			return
		}
		rep.ok("notify", fmt.Sprintf("%s, signed; not pinged (doctor --ping-notify sends a signed test delivery)", redactURL(u)))
		return
	}
	if err := relay.PingNotify(ctx, nc, cfg.Clock.Now()); err != nil {
		rep.fail("notify", fmt.Sprintf("a signed test delivery to %s failed: %v", redactURL(u), err),
			fmt.Sprintf("make the endpoint verify Payrecon-Signature with the same secret and answer 2xx to type %q", relay.NotificationTestType))
		return
	}
	if plain {
		rep.warn("notify", fmt.Sprintf("%s answered the signed test delivery, over plain HTTP beyond this machine", redactURL(u)), "use https, or a private network")
		return
	}
	rep.ok("notify", fmt.Sprintf("%s answered a signed test delivery with 2xx", redactURL(u)))
}

func checkConsole(rep *Report, cfg Config) {
	if _, _, err := net.SplitHostPort(cfg.AdminAddr); err != nil {
		rep.fail("console_password", fmt.Sprintf("--admin-addr %q is not host:port", cfg.AdminAddr), "set --admin-addr to host:port, e.g. 127.0.0.1:8081")
		return
	}
	// run's own rule (service.CheckAdminExposure): what it refuses fails.
	if err := service.CheckAdminExposure(cfg.AdminAddr, cfg.ConsolePassword); err != nil {
		rep.fail("console_password", err.Error()+": run refuses to start",
			fmt.Sprintf("set PAYRECON_CONSOLE_PASSWORD (or --console-password-file) to at least %d characters, or bind --admin-addr to 127.0.0.1", service.ConsolePasswordMinLength))
		return
	}
	n := utf8.RuneCountInString(cfg.ConsolePassword)
	switch {
	case n == 0:
		rep.ok("console_password", fmt.Sprintf("none, and --admin-addr %s is loopback: the console is open to this machine only", cfg.AdminAddr))
	case n < service.ConsolePasswordMinLength:
		rep.warn("console_password", fmt.Sprintf("set, but %d characters long (enough only while --admin-addr %s stays loopback)", n, cfg.AdminAddr),
			fmt.Sprintf("use a password of at least %d characters (a passphrase)", service.ConsolePasswordMinLength))
	default:
		rep.ok("console_password", fmt.Sprintf("set; --admin-addr %s", cfg.AdminAddr))
	}
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL is u without credentials or query.
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
