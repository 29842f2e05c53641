-- One command through the canonical writer (payrecon_transition, migration
-- 00017, which also writes the payment_transitions row): the webhook's road,
-- the events catch-up's, and direct callers'.
-- @payment_id (or NULL) / @intent_id name the payment; @target and @from are
-- the command's row of the transition table; @now is written to updated_at
-- and occurred_at; @source and @source_ref are the command's origin
-- (payrecon.Origin).
SELECT out_payment_id, out_before, out_after, out_version, out_outcome, out_transition_id
  FROM payrecon_transition(@payment_id, @intent_id, @target, @from, @now, @source, @source_ref)
