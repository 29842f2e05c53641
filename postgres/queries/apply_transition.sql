-- The canonical writer's one statement. Locks the payment, then moves it to
-- the target only from an allowed state; version and updated_at advance
-- exactly once per real transition. FOR UPDATE under READ COMMITTED waits
-- for a concurrent writer and then sees its committed status, so of many
-- racing callers exactly one applies and the rest see the target state.
-- $1 payment id (or NULL), $2 PaymentIntent id (or NULL), $3 target,
-- $4 allowed source statuses, $5 now.
WITH cur AS (
    SELECT id, status
      FROM payments
     WHERE ($1::bigint IS NOT NULL AND id = $1)
        OR ($1::bigint IS NULL AND stripe_payment_intent_id = $2)
       FOR UPDATE
),
upd AS (
    UPDATE payments p
       SET status = $3, version = p.version + 1, updated_at = $5
      FROM cur
     WHERE p.id = cur.id AND cur.status = ANY($4::text[])
    RETURNING p.id, p.status, p.version
)
SELECT cur.id, cur.status, upd.status, upd.version
  FROM cur LEFT JOIN upd ON upd.id = cur.id
