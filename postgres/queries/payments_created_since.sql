-- Payments created after @since (the growth G), from payments_created_at.
SELECT count(*) FROM payments WHERE created_at > @since
