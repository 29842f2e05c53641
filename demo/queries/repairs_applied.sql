-- Repair commands applied so far (progress).
SELECT count(*) FROM outbox WHERE processed_at IS NOT NULL
