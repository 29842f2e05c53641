-- Bounds how long the transaction of a fenced batch may sit idle, waiting
-- for its process, while it holds the River job's row (job_fence.sql): a
-- replica frozen mid-commit (SIGSTOP, a VM paused, a partition that keeps
-- the TCP connection) would otherwise hold the row lock until it wakes, and
-- River's rescuer, which rescues every stuck job in one statement, would
-- wait on it: no job of any replica rescued. The server ends such a session
-- after the timeout; its batch then fails and is retried, fenced.
-- set_config(…, true) is SET LOCAL: it ends with the transaction.
--   @timeout  the timeout, as PostgreSQL reads it ('10s')
SELECT set_config('idle_in_transaction_session_timeout', @timeout, true)
