-- Record a payout's lines, read in full, in one statement: one row per
-- balance transaction whatever how often it is read (the id is the key),
-- each matched to the local payment of its PaymentIntent (the row that
-- records it, else the session row whose Checkout Session named it:
-- payrecon_session_intents); then the
-- payout's totals, and that its lines were read under its current status.
-- Returns how many lines were new and how many were written.
--   @payout_id, @account   the payout
--   @lines       a JSON array of lines (postgres.lineRow)
--   @totals      the lines summed by reporting category (JSON)
--   @count, @net how many lines and their net, the payout's own left out
--   @status      the payout's status when its lines were listed
--   @now         read at
WITH input AS (
    SELECT DISTINCT ON (balance_transaction_id) *
      FROM json_to_recordset(@lines::json) AS t(
           balance_transaction_id text, type text, reporting_category text, amount bigint, fee bigint, net bigint,
           currency text, converted boolean, created timestamptz, source_id text, source_type text,
           charge_id text, payment_intent_id text)
     ORDER BY balance_transaction_id
),
written AS (
    INSERT INTO stripe_payout_lines AS l
           (balance_transaction_id, payout_id, account, type, reporting_category, amount, fee, net, currency,
            converted, created, source_id, source_type, charge_id, payment_intent_id, payment_id, read_at)
    SELECT i.balance_transaction_id, @payout_id, @account, i.type, i.reporting_category, i.amount, i.fee, i.net,
           i.currency, i.converted, i.created, i.source_id, i.source_type, i.charge_id, i.payment_intent_id,
           coalesce((SELECT pay.id FROM payments pay WHERE pay.stripe_payment_intent_id = i.payment_intent_id ORDER BY pay.id LIMIT 1),
                    (SELECT si.payment_id FROM payrecon_session_intents si WHERE si.intent_id = i.payment_intent_id)),
           @now
      FROM input i
        ON CONFLICT (balance_transaction_id) DO UPDATE
       SET payout_id = EXCLUDED.payout_id,
           account = EXCLUDED.account,
           type = EXCLUDED.type,
           reporting_category = EXCLUDED.reporting_category,
           amount = EXCLUDED.amount,
           fee = EXCLUDED.fee,
           net = EXCLUDED.net,
           currency = EXCLUDED.currency,
           converted = EXCLUDED.converted,
           created = EXCLUDED.created,
           source_id = EXCLUDED.source_id,
           source_type = EXCLUDED.source_type,
           charge_id = EXCLUDED.charge_id,
           payment_intent_id = EXCLUDED.payment_intent_id,
           payment_id = EXCLUDED.payment_id,
           read_at = EXCLUDED.read_at
    RETURNING (xmax = 0) AS inserted
),
marked AS (
    UPDATE stripe_payouts
       SET totals = @totals::jsonb, lines_count = @count, lines_net = @net,
           lines_read_at = @now, lines_read_status = @status
     WHERE payout_id = @payout_id
    RETURNING payout_id
)
SELECT (SELECT count(*) FILTER (WHERE inserted) FROM written)::int AS new_lines,
       (SELECT count(*) FROM written)::int                         AS lines,
       (SELECT count(*) FROM marked)::int                          AS payouts
