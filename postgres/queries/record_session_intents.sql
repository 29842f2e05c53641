-- Keeps the PaymentIntent each session row's Checkout Session named
-- (payrecon_session_intents, migration 00027): open_missing_locally.sql
-- then never takes it for an orphan. A row already kept as it is is not
-- written again (a cycle over unchanged session rows writes nothing here).
--   @payment_ids, @session_ids, @intent_ids  one element per session row
--   @now                                     seen at
INSERT INTO payrecon_session_intents AS s (intent_id, payment_id, session_id, seen_at)
SELECT t.intent_id, t.payment_id, t.session_id, @now
  FROM unnest(@payment_ids::bigint[], @session_ids::text[], @intent_ids::text[]) AS t(payment_id, session_id, intent_id)
    ON CONFLICT (intent_id) DO UPDATE
   SET payment_id = EXCLUDED.payment_id, session_id = EXCLUDED.session_id, seen_at = EXCLUDED.seen_at
 WHERE (s.payment_id, s.session_id) IS DISTINCT FROM (EXCLUDED.payment_id, EXCLUDED.session_id)
