-- Settlement (`payrecon payouts`, `run --payouts-interval`): Stripe's payouts
-- and, for each automatic payout whose reconciliation completed, the balance
-- transactions it contains (its lines), so that every payment can be
-- followed to the bank. Tables of payrecon's own; amounts in minor units.
-- account is the Stripe account the payout belongs to: '' for the
-- platform's own account, 'acct_…' for a connected account (Connect).

-- +goose Up
CREATE TABLE IF NOT EXISTS stripe_payouts (
    payout_id             text        PRIMARY KEY,
    account               text        NOT NULL DEFAULT '',
    amount                bigint      NOT NULL,
    currency              text        NOT NULL,
    status                text        NOT NULL,
    automatic             boolean     NOT NULL,
    method                text,
    created               timestamptz NOT NULL,
    arrival_date          timestamptz,
    reconciliation_status text        NOT NULL,
    failure_code          text,
    -- The lines summed by reporting category, the payout's own line left
    -- out: {"charge": {"count": …, "amount": …, "fee": …, "net": …}, …};
    -- NULL until the lines were read.
    totals                jsonb,
    -- How many lines there are and what their net adds up to (the payout's
    -- own line left out): the payout's own check compares it with amount.
    lines_count           integer,
    lines_net             bigint,
    -- When the lines were last read in full, and under which status and
    -- reconciliation status: a payout read in full is read again only
    -- when one of them changes.
    lines_read_at         timestamptz,
    lines_read_status     text,
    -- When payrecon first saw the payout paid: one that fails or is
    -- canceled afterwards is flagged.
    paid_seen_at          timestamptz,
    first_seen_at         timestamptz NOT NULL,
    observed_at           timestamptz NOT NULL
);
-- payouts list (newest first) and the settlement check's window, per account.
CREATE INDEX IF NOT EXISTS stripe_payouts_account_created ON stripe_payouts (account, created);
-- payouts export --from --to: by arrival date.
CREATE INDEX IF NOT EXISTS stripe_payouts_arrival ON stripe_payouts (arrival_date, payout_id);

-- One row per balance transaction, however often its payout is read and by
-- however many replicas: the balance transaction id is the key.
CREATE TABLE IF NOT EXISTS stripe_payout_lines (
    balance_transaction_id text        PRIMARY KEY,
    payout_id              text        NOT NULL REFERENCES stripe_payouts (payout_id) ON DELETE CASCADE,
    account                text        NOT NULL DEFAULT '',
    type                   text        NOT NULL,
    reporting_category     text        NOT NULL,
    amount                 bigint      NOT NULL,
    fee                    bigint      NOT NULL,
    net                    bigint      NOT NULL,
    currency               text        NOT NULL,
    -- Stripe converted the line from another currency (exchange_rate set).
    converted              boolean     NOT NULL DEFAULT false,
    created                timestamptz NOT NULL,
    source_id              text,
    source_type            text,
    -- The charge the line is about (a charge's own id, a refund's or a
    -- dispute's charge) and its PaymentIntent, when the source has one.
    charge_id              text,
    payment_intent_id      text,
    -- The local payment of that PaymentIntent, NULL when there is none. No
    -- foreign key: payments may be a view.
    payment_id             bigint,
    read_at                timestamptz NOT NULL
);
-- A payout's lines in order (payouts show, the export, the console).
CREATE INDEX IF NOT EXISTS stripe_payout_lines_payout ON stripe_payout_lines (payout_id, created DESC, balance_transaction_id DESC);
-- What was settled for a PaymentIntent (the settlement check).
CREATE INDEX IF NOT EXISTS stripe_payout_lines_intent ON stripe_payout_lines (payment_intent_id) WHERE payment_intent_id IS NOT NULL;

-- +goose Down
DROP TABLE IF EXISTS stripe_payout_lines;
DROP TABLE IF EXISTS stripe_payouts;
