-- The console's findings list and CSV export: the filter, then one keyset
-- page, newest first, strictly after (@after_at, @after_id). A NULL
-- parameter does not filter. Ordered by the (detected_at, id) index.
-- @account keeps one account's payments' findings ('' the platform's own),
-- as `findings list --account` does; the account column replaces the
-- marker (postgres.AccountColumn).
SELECT f.id, f.payment_id, coalesce(f.stripe_payment_intent_id, p.stripe_payment_intent_id, ''), coalesce(p.order_id, ''),
       f.kind, f.verdict, f.local_status, coalesce(f.external_status, ''), f.reason, coalesce(f.repair_command, ''),
       coalesce(f.repair_outcome, ''), coalesce(f.job, ''), f.detected_at, f.resolved_at, f.resolution,
       coalesce(f.resolved_by, ''), coalesce(f.resolution_note, ''), f.details
  FROM reconciliation_findings f
  LEFT JOIN payments p ON p.id = f.payment_id
 WHERE (@state::text = 'all' OR (@state::text = 'open') = (f.resolved_at IS NULL))
   AND (@kinds::text[] IS NULL OR f.kind = ANY (@kinds::text[]))
   AND (@verdicts::text[] IS NULL OR f.verdict = ANY (@verdicts::text[]))
   AND (@detected_after::timestamptz IS NULL OR f.detected_at > @detected_after::timestamptz)
   AND (@detected_before::timestamptz IS NULL OR f.detected_at < @detected_before::timestamptz)
   AND (@after_at::timestamptz IS NULL OR (f.detected_at, f.id) < (@after_at::timestamptz, @after_id::bigint))
   AND (@account::text IS NULL OR EXISTS (SELECT 1 FROM payments ap WHERE ap.id = f.payment_id AND true /*account:ap*/))
 ORDER BY f.detected_at DESC, f.id DESC
 LIMIT @limit::int
