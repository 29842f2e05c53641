-- One command through the canonical writer (payrecon_transition, migration
-- 00006): the webhook's road, and the events catch-up's.
-- @payment_id (or NULL) / @intent_id name the payment; @target and @from are
-- the command's row of the transition table; @now is written to updated_at.
SELECT out_payment_id, out_before, out_after, out_version, out_outcome
  FROM payrecon_transition(@payment_id, @intent_id, @target, @from, @now)
