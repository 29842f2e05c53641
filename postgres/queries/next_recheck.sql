-- When the job's earliest recheck of @reason (any reason when '') is due;
-- NULL when none is queued. A recheck whose payment has gone is skipped:
-- nothing can read it (read_rechecks.sql joins payments), and when payments
-- is a view no foreign key removes it (docs/payments-table.md), so counting
-- it would wake the sweep for nothing, again and again.
--   @job, @reason
SELECT (SELECT r.due_at
          FROM reconciliation_recheck r
         WHERE r.job = @job AND (@reason = '' OR r.reason = @reason)
           AND EXISTS (SELECT 1 FROM payments p WHERE p.id = r.payment_id)
         ORDER BY r.due_at
         LIMIT 1)
