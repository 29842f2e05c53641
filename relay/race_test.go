package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
)

// A webhook and a relay repair for the same payment, racing 200 times over:
// exactly one transition each time, and the finding resolved only when the
// payment is paid. Each round seeds a pending payment, then commits its
// missed_success finding, outbox command and River job (the relay is woken
// by the commit) and delivers payment_intent.succeeded over HTTP: at the same
// moment in even rounds, and as soon as a worker has taken the job in odd
// rounds.
func TestWebhookRacesRepair(t *testing.T) {
	t.Parallel()
	const rounds = 200
	b := setup(t, testConfig(t))
	ctx := context.Background()
	installAudit(t, b.pool)
	const secret = "whsec_race"
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Events: postgres.NewEvents(b.pool, b.writer, nil), Webhook: httpapi.WebhookConfig{Secrets: []string{secret}},
	}))
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	if err := b.relay.Start(ctx); err != nil {
		t.Fatal(err)
	}

	// A watcher checks, all along, that no finding is closed while its
	// payment is not paid.
	var violations atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int64
			if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM reconciliation_findings f JOIN payments p ON p.id = f.payment_id
				WHERE f.resolved_at IS NOT NULL AND p.status <> 'paid'`).Scan(&n); err == nil {
				violations.Add(n)
			}
		}
	}()

	webhookWon, relayWon := 0, 0
	for round := range rounds {
		ids := pgtest.InsertPayments(t, b.pool, []pgtest.Payment{{IntentID: fmt.Sprintf("pi_race_%d", round), Status: payrecon.StatusPending}})
		payload, err := json.Marshal(map[string]any{
			"id": fmt.Sprintf("evt_race_%d", round), "object": "event", "type": payrecon.EventPaymentIntentSucceeded,
			"created": time.Now().Unix(), "api_version": "2025-01-27.acacia",
			"data": map[string]any{"object": map[string]any{"id": fmt.Sprintf("pi_race_%d", round), "object": "payment_intent", "status": "succeeded"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg        sync.WaitGroup
			start     = make(chan struct{})
			committed = make(chan struct{})
			rs        repairs
			seedErr   error
			hookOut   string
			hookErr   error
		)
		wg.Go(func() {
			<-start
			defer close(committed)
			rs, seedErr = b.commitRepairs(ctx, ids, true)
		})
		wg.Go(func() {
			<-start
			if round%2 == 1 {
				// Odd rounds give the relay a head start: the webhook
				// goes once a worker has picked the job up, so it
				// meets the repair inside the database.
				<-committed
				for {
					var waiting bool
					err := b.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM river_job WHERE state = 'available')").Scan(&waiting)
					if err != nil || !waiting {
						break
					}
				}
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/stripe", bytes.NewReader(payload))
			req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, secret, time.Now()))
			resp, err := client.Do(req)
			if err != nil {
				hookErr = err
				return
			}
			defer resp.Body.Close()
			var body struct{ Outcome string }
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
				hookErr = fmt.Errorf("status %d, %v", resp.StatusCode, err)
			}
			hookOut = body.Outcome
		})
		close(start)
		wg.Wait()
		if seedErr != nil || hookErr != nil {
			t.Fatalf("round %d: seed: %v; webhook: %v", round, seedErr, hookErr)
		}
		testkit.WaitFor(t, "the repair to be applied", 10*time.Second, func() bool {
			return pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = $1 AND processed_at IS NOT NULL", rs.outbox[0]) == 1
		})
		var (
			status, repairOutcome, resolution string
			version                           int64
		)
		if err := b.pool.QueryRow(ctx, `SELECT p.status, p.version, o.outcome, coalesce(f.resolution, '(open)')
			FROM payments p JOIN reconciliation_findings f ON f.payment_id = p.id JOIN outbox o ON o.id = $2
			WHERE p.id = $1`, ids[0], rs.outbox[0]).Scan(&status, &version, &repairOutcome, &resolution); err != nil {
			t.Fatal(err)
		}
		switch {
		case status != "paid" || version != 1:
			t.Fatalf("round %d: payment %s version %d, want paid version 1", round, status, version)
		case hookOut == "applied" && repairOutcome == "already_in_target" && resolution == "already_in_target":
			webhookWon++
		case hookOut == "already_in_target" && repairOutcome == "applied" && resolution == "repaired":
			relayWon++
		default:
			t.Fatalf("round %d: webhook %s, repair %s, finding %s: not exactly one transition with the finding resolved",
				round, hookOut, repairOutcome, resolution)
		}
	}
	close(stop)
	<-watched
	if n := violations.Load(); n != 0 {
		t.Errorf("a finding was seen resolved while its payment was not paid (%d times)", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE status = 'paid' AND version = 1"); n != rounds {
		t.Errorf("%d payments paid once, want %d", n, rounds)
	}
	t.Logf("%d rounds: the webhook won %d, the relay won %d", rounds, webhookWon, relayWon)
}
