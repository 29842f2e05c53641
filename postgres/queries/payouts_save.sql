-- Record one page of payouts as Stripe listed them (or one payout read
-- alone): insert new ones, update the rest, keep when payrecon first saw
-- each paid. Returns each payout with whether its lines are to be read: an
-- automatic payout whose reconciliation completed and whose lines were
-- not yet read in full under its current status.
--   @payouts     a JSON array of payouts (postgres.payoutRow)
--   @paid        the paid status
--   @completed   the reconciliation status of an itemisable payout
--   @now         observed at
INSERT INTO stripe_payouts AS p
       (payout_id, account, amount, currency, status, automatic, method, created, arrival_date,
        reconciliation_status, failure_code, paid_seen_at, first_seen_at, observed_at)
SELECT i.payout_id, i.account, i.amount, i.currency, i.status, i.automatic, i.method, i.created, i.arrival_date,
       i.reconciliation_status, i.failure_code, CASE WHEN i.status = @paid THEN @now::timestamptz END, @now, @now
  FROM json_to_recordset(@payouts::json) AS i(
       payout_id text, account text, amount bigint, currency text, status text, automatic boolean, method text,
       created timestamptz, arrival_date timestamptz, reconciliation_status text, failure_code text)
    ON CONFLICT (payout_id) DO UPDATE
   SET amount = EXCLUDED.amount,
       currency = EXCLUDED.currency,
       status = EXCLUDED.status,
       automatic = EXCLUDED.automatic,
       method = EXCLUDED.method,
       arrival_date = EXCLUDED.arrival_date,
       reconciliation_status = EXCLUDED.reconciliation_status,
       failure_code = EXCLUDED.failure_code,
       paid_seen_at = coalesce(p.paid_seen_at, EXCLUDED.paid_seen_at),
       observed_at = EXCLUDED.observed_at
RETURNING p.payout_id,
          p.automatic AND p.reconciliation_status = @completed
              AND p.lines_read_status IS DISTINCT FROM p.status AS read_lines
