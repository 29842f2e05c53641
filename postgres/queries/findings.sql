-- Findings, newest first, filtered; a zero filter (NULL, an empty array)
-- selects everything.
--   @id            one finding (NULL: any)
--   @state         'open', 'resolved' or 'all'
--   @kinds, @verdicts         any of these (empty: any)
--   @before, @after           bounds on detected_at (NULL: none)
--   @payment_id    the findings of one payment (NULL: any)
--   @account       the findings of one account's payments (NULL: any; ''
--                  the platform's own), with the account column in the
--                  marker (postgres.AccountColumn)
--   @limit
SELECT id, payment_id, coalesce(stripe_payment_intent_id, ''),
       coalesce((SELECT o.order_id FROM payments o WHERE o.id = reconciliation_findings.payment_id), ''), kind, verdict, local_status,
       coalesce(external_status, ''), reason, coalesce(repair_command, ''), coalesce(repair_outcome, ''),
       coalesce(job, ''), detected_at, resolved_at, resolution, coalesce(resolved_by, ''),
       coalesce(resolution_note, ''), details
  FROM reconciliation_findings
 WHERE (@id::bigint IS NULL OR id = @id)
   AND (@state = 'all'
        OR (@state = 'open' AND resolved_at IS NULL)
        OR (@state = 'resolved' AND resolved_at IS NOT NULL))
   AND (cardinality(@kinds::text[]) = 0 OR kind = ANY (@kinds))
   AND (cardinality(@verdicts::text[]) = 0 OR verdict = ANY (@verdicts))
   AND (@before::timestamptz IS NULL OR detected_at < @before)
   AND (@after::timestamptz IS NULL OR detected_at > @after)
   AND (@payment_id::bigint IS NULL OR payment_id = @payment_id)
   AND (@account::text IS NULL
        OR EXISTS (SELECT 1 FROM payments p WHERE p.id = reconciliation_findings.payment_id AND true /*account:p*/))
 ORDER BY detected_at DESC, id DESC
 LIMIT @limit
