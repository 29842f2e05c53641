-- Any payments table (docs/payments-table.md). payments is the application's
-- table, or a view standing in for it (other table or column names, other
-- status values) in a schema of payrecon's that search_path finds first.
-- `payrecon migrate` checks its shape before running anything
-- (postgres.CheckPaymentsShape).
--
-- A foreign key cannot reference a view, so 00001 and 00002 no longer
-- declare theirs inline (they did until this migration was written, and
-- failed on a view); this migration adds them when payments is a table. An
-- installation made before has them already, found here by what they are
-- whatever their names, and gets nothing new; a table migrated now ends up
-- with the same constraints, under the same names.
--
-- The other places that assumed a table are handled where they are: 00001
-- adds the reconciler's two columns only to a table (a view must have
-- them), 00005 builds its indexes only on a plain table (it is a Go
-- migration for that), and the row estimate of queries/
-- payments_rows_estimate.sql reads the statistics of the table under a
-- view.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF coalesce((SELECT relkind FROM pg_class WHERE oid = to_regclass('payments')) NOT IN ('r', 'p'), true) THEN
        RETURN; -- a view: the application's table carries its own keys
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                    WHERE contype = 'f'
                      AND conrelid = 'reconciliation_findings'::regclass
                      AND confrelid = 'payments'::regclass) THEN
        ALTER TABLE reconciliation_findings
            ADD CONSTRAINT reconciliation_findings_payment_id_fkey
            FOREIGN KEY (payment_id) REFERENCES payments (id);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                    WHERE contype = 'f'
                      AND conrelid = 'reconciliation_recheck'::regclass
                      AND confrelid = 'payments'::regclass) THEN
        ALTER TABLE reconciliation_recheck
            ADD CONSTRAINT reconciliation_recheck_payment_id_fkey
            FOREIGN KEY (payment_id) REFERENCES payments (id) ON DELETE CASCADE;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Nothing: these are the keys 00001 and 00002 always gave a table, and an
-- installation older than this migration got them from those.
SELECT 1;
